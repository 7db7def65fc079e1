package methods

import (
	"errors"
	"fmt"
	"math"
)

// Membership is a fuzzy membership function μ: ℝ → [0, 1] of one input.
type Membership func(x float64) float64

// GaussianMembership returns μ(x) = exp(−(x − c)² / (2σ²)), σ > 0.
func GaussianMembership(c, sigma float64) Membership {
	return func(x float64) float64 {
		u := (x - c) / sigma
		return math.Exp(-0.5 * u * u)
	}
}

// TriangularMembership returns the triangle with feet a and c and peak b
// (a <= b <= c): 0 outside (a, c), 1 at b, linear in between. A foot equal
// to the peak gives a vertical edge (a shoulder of height 1 at b).
func TriangularMembership(a, b, c float64) Membership {
	return func(x float64) float64 {
		switch {
		case x == b:
			return 1
		case x <= a || x >= c:
			return 0
		case x < b:
			return (x - a) / (b - a)
		default:
			return (c - x) / (c - b)
		}
	}
}

// FuzzyRule is a zero-order Takagi–Sugeno rule: IF x_1 is A_1 AND … AND
// x_d is A_d THEN y = Output.
type FuzzyRule struct {
	// Antecedents holds one membership function per input; nil entries
	// ("don't care") have membership 1.
	Antecedents []Membership
	// Output is the rule's constant consequent (one value per output).
	Output []float64
}

// TakagiSugeno returns the zero-order Takagi–Sugeno inference at input x:
// the local mean of the rule outputs with the rule firing strengths as
// kernel,
//
//	y(x) = Σ_r w_r(x) z_r / Σ_r w_r(x),   w_r(x) = Π_j μ_rj(x_j)
//
// (product AND). It is an error wrapping ErrZeroWeights if no rule fires
// at x, and an error if rules disagree in their number of inputs or
// outputs, or a membership is negative or not finite.
func TakagiSugeno(rules []FuzzyRule, x []float64) ([]float64, error) {
	if len(rules) == 0 {
		return nil, errors.New("takagi-sugeno: no rules")
	}
	m := len(rules[0].Output)
	if m == 0 {
		return nil, errors.New("takagi-sugeno: rule 0 has no output")
	}
	out := make([]float64, m)
	var total float64
	for r, rule := range rules {
		if len(rule.Antecedents) != len(x) {
			return nil, fmt.Errorf("takagi-sugeno: rule %d has %d antecedents for %d inputs", r, len(rule.Antecedents), len(x))
		}
		if len(rule.Output) != m {
			return nil, fmt.Errorf("takagi-sugeno: rule %d has %d outputs, rule 0 has %d", r, len(rule.Output), m)
		}
		w := 1.0
		for j, mu := range rule.Antecedents {
			if mu == nil {
				continue
			}
			v := mu(x[j])
			if !(v >= 0) || math.IsInf(v, 1) {
				return nil, fmt.Errorf("takagi-sugeno: rule %d input %d: membership %v", r, j, v)
			}
			w *= v
		}
		total += w
		for c, z := range rule.Output {
			out[c] += w * z
		}
	}
	if total == 0 {
		return nil, fmt.Errorf("takagi-sugeno: no rule fires: %w", ErrZeroWeights)
	}
	for c := range out {
		out[c] /= total
	}
	return out, nil
}
