package transformer

import (
	"fmt"
	"math/rand/v2"

	"github.com/locusml/locus/autodiff"
	"gorgonia.org/tensor"
)

// Generate continues prompt by n tokens with a causal LM (cfg.Arch "lm") run by m,
// choosing each token with s and stopping early after the token stop (if stop >= 0).
// The context is the last cfg.MaxLen tokens. It returns the generated tokens only.
//
// Decoding recomputes the whole context at every step (no key/value cache).
func Generate(m *autodiff.Model, cfg Config, prompt []int, n int, s Sampling, stop int, rng *rand.Rand) ([]int, error) {
	if cfg.Arch != "lm" {
		return nil, fmt.Errorf("generate: arch %q is not a causal LM", cfg.Arch)
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	if len(prompt) == 0 {
		return nil, fmt.Errorf("generate: empty prompt")
	}
	for i, id := range prompt {
		if id < 0 || id >= cfg.Vocab {
			return nil, fmt.Errorf("generate: prompt token %d at position %d is outside the vocabulary of %d", id, i, cfg.Vocab)
		}
	}
	seq := append([]int(nil), prompt...)
	var out []int
	row := make([]float64, cfg.Vocab)
	for range n {
		ctx := seq[max(0, len(seq)-cfg.MaxLen):]
		ids := tensor.New(tensor.WithShape(1, len(ctx)), tensor.WithBacking(append([]int(nil), ctx...)))
		res, err := m.Forward(map[string]*tensor.Dense{InputIDs: ids})
		if err != nil {
			return nil, fmt.Errorf("generate: %w", err)
		}
		logits := res.Values[OutputLogits]
		last := (len(ctx) - 1) * cfg.Vocab
		switch d := logits.Data().(type) {
		case []float32:
			for j := range row {
				row[j] = float64(d[last+j])
			}
		case []float64:
			copy(row, d[last:last+cfg.Vocab])
		}
		next := s.Pick(row, rng)
		out = append(out, next)
		seq = append(seq, next)
		if next == stop {
			break
		}
	}
	return out, nil
}
