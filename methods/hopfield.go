package methods

import (
	"errors"
	"fmt"
	"math"

	"github.com/locusml/locus/layers"
)

// HopfieldUpdate returns one step of modern (continuous) Hopfield retrieval,
//
//	ξ ← Xᵀ softmax(β X ξ),
//
// where the rows of patterns are the stored patterns X (n×d) and ξ the state
// (length d): the local mean of the patterns at ξ with the exponential
// kernel at bandwidth 1/β. β must be > 0.
func HopfieldUpdate(patterns [][]float64, xi []float64, beta float64) ([]float64, error) {
	d, err := checkPoints("patterns", patterns)
	if err != nil {
		return nil, fmt.Errorf("hopfield: %w", err)
	}
	if err := checkQueries([][]float64{xi}, d); err != nil {
		return nil, fmt.Errorf("hopfield: state: %w", err)
	}
	if !(beta > 0) || math.IsInf(beta, 1) {
		return nil, fmt.Errorf("hopfield: beta must be a positive finite number, got %v", beta)
	}
	out := make([]float64, d)
	hopfieldStep(patterns, xi, beta, make([]float64, len(patterns)), out)
	return out, nil
}

func hopfieldStep(patterns [][]float64, xi []float64, beta float64, w, out []float64) {
	_ = normalizedWeights(layers.Exponential{}, 1/beta, xi, patterns, w) // finite inputs: never all zero, never NaN
	weightedMean(w, patterns, out)
}

// HopfieldRetrieve iterates HopfieldUpdate from xi until a step moves the
// state by at most 1e-12·(1+‖ξ‖), or maxIter steps (0 means 100), and returns the
// final state. Small β retrieves (nearly) the mean of all patterns; large β
// the stored pattern most similar to xi in dot product (for patterns of
// equal norm, the nearest one).
func HopfieldRetrieve(patterns [][]float64, xi []float64, beta float64, maxIter int) ([]float64, error) {
	state, err := HopfieldUpdate(patterns, xi, beta)
	if err != nil {
		return nil, err
	}
	if maxIter == 0 {
		maxIter = 100
	}
	w, next := make([]float64, len(patterns)), make([]float64, len(xi))
	for it := 1; it < maxIter; it++ {
		hopfieldStep(patterns, state, beta, w, next)
		step := math.Sqrt(sqDist(next, state))
		copy(state, next)
		if step <= 1e-12*(1+math.Sqrt(dot(state, state))) {
			break
		}
	}
	return state, nil
}

// HopfieldBetaSweep returns HopfieldRetrieve(patterns, xi, β, maxIter) for
// each β in betas: one retrieved state per β, from the average of the
// patterns (small β, a wide kernel) to a single pattern (large β).
func HopfieldBetaSweep(patterns [][]float64, xi []float64, betas []float64, maxIter int) ([][]float64, error) {
	out := make([][]float64, len(betas))
	for i, b := range betas {
		s, err := HopfieldRetrieve(patterns, xi, b, maxIter)
		if err != nil {
			return nil, fmt.Errorf("beta %v: %w", b, err)
		}
		out[i] = s
	}
	return out, nil
}

// Hopfield is a classical (binary) Hopfield network on ±1 states.
type Hopfield struct {
	// W is the symmetric d×d weight matrix with zero diagonal, row-major.
	W [][]float64
}

// NewHopfield stores the ±1 patterns (n×d) with the Hebbian rule
// W = (1/n) Σ_p p pᵀ with the diagonal set to zero.
func NewHopfield(patterns [][]float64) (*Hopfield, error) {
	d, err := checkPoints("patterns", patterns)
	if err != nil {
		return nil, fmt.Errorf("hopfield: %w", err)
	}
	if err := checkSigns(patterns); err != nil {
		return nil, fmt.Errorf("hopfield: patterns: %w", err)
	}
	w := make([][]float64, d)
	for i := range w {
		w[i] = make([]float64, d)
	}
	scale := 1 / float64(len(patterns))
	for _, p := range patterns {
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				if i != j {
					w[i][j] += scale * p[i] * p[j]
				}
			}
		}
	}
	return &Hopfield{W: w}, nil
}

func checkSigns(rows [][]float64) error {
	for i, r := range rows {
		for j, v := range r {
			if v != 1 && v != -1 {
				return fmt.Errorf("row %d entry %d is %v, want ±1", i, j, v)
			}
		}
	}
	return nil
}

// Recall runs asynchronous sign updates s_i ← sign(Σ_j W_ij s_j), in index
// order, from the ±1 state until a full sweep changes nothing (a fixed
// point; the energy never increases), or maxSweeps sweeps (0 means 100).
// A zero field leaves s_i unchanged. It returns a new slice.
func (h *Hopfield) Recall(state []float64, maxSweeps int) ([]float64, error) {
	if len(state) != len(h.W) {
		return nil, fmt.Errorf("hopfield: state has length %d, network has %d units", len(state), len(h.W))
	}
	if err := checkSigns([][]float64{state}); err != nil {
		return nil, fmt.Errorf("hopfield: state: %w", err)
	}
	if maxSweeps == 0 {
		maxSweeps = 100
	}
	if maxSweeps < 0 {
		return nil, errors.New("hopfield: maxSweeps < 0")
	}
	s := append([]float64(nil), state...)
	for sweep := 0; sweep < maxSweeps; sweep++ {
		changed := false
		for i, row := range h.W {
			field := dot(row, s)
			if field > 0 && s[i] != 1 {
				s[i], changed = 1, true
			} else if field < 0 && s[i] != -1 {
				s[i], changed = -1, true
			}
		}
		if !changed {
			break
		}
	}
	return s, nil
}

// Energy returns the Hopfield energy E(s) = -½ sᵀ W s; s must have len(h.W) entries.
func (h *Hopfield) Energy(s []float64) float64 {
	var e float64
	for i, row := range h.W {
		e -= 0.5 * s[i] * dot(row, s)
	}
	return e
}
