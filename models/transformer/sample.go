package transformer

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// Sampling chooses the next token from a row of logits. The zero value is greedy
// decoding (argmax).
type Sampling struct {
	// Temperature divides the logits; 0 means greedy decoding.
	Temperature float64
	// TopK keeps the K most likely tokens; 0 keeps all.
	TopK int
	// TopP keeps the smallest set of most likely tokens whose probability reaches P
	// (nucleus sampling); 0 or 1 keeps all.
	TopP float64
}

// Validate reports the first invalid field.
func (s Sampling) Validate() error {
	switch {
	case s.Temperature < 0 || math.IsNaN(s.Temperature):
		return fmt.Errorf("sampling temperature %g, want >= 0", s.Temperature)
	case s.TopK < 0:
		return fmt.Errorf("sampling top-k %d, want >= 0", s.TopK)
	case s.TopP < 0 || s.TopP > 1 || math.IsNaN(s.TopP):
		return fmt.Errorf("sampling top-p %g, want 0 <= p <= 1", s.TopP)
	}
	return nil
}

// Pick returns the chosen token for one row of logits.
func (s Sampling) Pick(logits []float64, rng *rand.Rand) int {
	if s.Temperature == 0 {
		return argmax(logits)
	}
	idx := make([]int, len(logits))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return logits[idx[a]] > logits[idx[b]] })
	if s.TopK > 0 && s.TopK < len(idx) {
		idx = idx[:s.TopK]
	}
	mx := logits[idx[0]]
	probs := make([]float64, len(idx))
	var sum float64
	for i, j := range idx {
		probs[i] = math.Exp((logits[j] - mx) / s.Temperature)
		sum += probs[i]
	}
	for i := range probs {
		probs[i] /= sum
	}
	if s.TopP > 0 && s.TopP < 1 {
		var c float64
		for i, p := range probs {
			c += p
			if c >= s.TopP {
				idx, probs = idx[:i+1], probs[:i+1]
				break
			}
		}
		sum = 0
		for _, p := range probs {
			sum += p
		}
		for i := range probs {
			probs[i] /= sum
		}
	}
	u := rng.Float64()
	for i, p := range probs {
		u -= p
		if u < 0 {
			return idx[i]
		}
	}
	return idx[len(idx)-1]
}

func argmax(x []float64) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}
