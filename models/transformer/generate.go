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
// Decoding recomputes the whole context at every step (no key/value cache); Generator
// decodes the same tokens with a cache.
func Generate(m *autodiff.Model, cfg Config, prompt []int, n int, s Sampling, stop int, rng *rand.Rand) ([]int, error) {
	if cfg.Arch != ArchLM {
		return nil, fmt.Errorf("generate: arch %s is not a causal LM", cfg.Arch)
	}
	return generate(m, cfg, nil, prompt, n, s, stop, rng)
}

// GenerateFromSource is Generate for an encoder–decoder (cfg.Arch "encdec"): it
// continues the decoder's prompt (usually just a start token) for the source sequence
// src, recomputing the encoder and the whole decoder context at every step.
func GenerateFromSource(m *autodiff.Model, cfg Config, src, prompt []int, n int, s Sampling, stop int, rng *rand.Rand) ([]int, error) {
	if cfg.Arch != ArchEncDec {
		return nil, fmt.Errorf("generate: arch %s is not an encoder–decoder", cfg.Arch)
	}
	return generate(m, cfg, src, prompt, n, s, stop, rng)
}

func generate(m *autodiff.Model, cfg Config, src, prompt []int, n int, s Sampling, stop int, rng *rand.Rand) ([]int, error) {
	if err := checkGenerate(cfg, src, prompt, s); err != nil {
		return nil, err
	}
	seq := append([]int(nil), prompt...)
	var out []int
	row := make([]float64, cfg.Vocab)
	for range n {
		ctx := seq[max(0, len(seq)-cfg.MaxLen):]
		in := map[string]*tensor.Dense{InputIDs: idsTensor(ctx)}
		if src != nil {
			in[InputSource] = idsTensor(src)
		}
		res, err := m.Forward(in)
		if err != nil {
			return nil, fmt.Errorf("generate: %w", err)
		}
		logitsRow(row, res.Values[OutputLogits], len(ctx)-1)
		next := s.Pick(row, rng)
		out = append(out, next)
		seq = append(seq, next)
		if next == stop {
			break
		}
	}
	return out, nil
}
