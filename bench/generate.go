package bench

import (
	"math/rand/v2"
	"time"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/models/transformer"
)

// GenerateTokens is the generate workload's tokens per run unless Shape.NewTokens says
// otherwise, as the peer's --new-tokens.
const GenerateTokens = 256

// newGenerate is the peer's generate workload: the charlm model (untrained, seed's
// parameters; the sizes and context of shape, else d = 64, 4 heads, 2 layers, context 64)
// continues a one-token prompt (id 0) by GenerateTokens tokens (shape.NewTokens), batch 1, greedy; one Step
// is one whole generation. Locus decodes with its key/value cache (transformer.Generator,
// as `locus sample`); the peer re-runs the model on the last context tokens for every
// token (nanoGPT's generate). Past the context both recompute the window at every token,
// since positions are absolute.
func newGenerate(seed uint64, shape Shape) (*Workload, error) {
	const V = 65
	T, n := or(shape.SeqLen, 64), or(shape.NewTokens, GenerateTokens)
	cfg, err := shape.lmConfig(V, T)
	if err != nil {
		return nil, err
	}
	ps, err := autodiff.NewParams(autodiff.Float32, seed)
	if err != nil {
		return nil, err
	}
	m, err := transformer.New(cfg, ps)
	if err != nil {
		return nil, err
	}
	gen, err := transformer.NewGenerator(m)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed+1, 0))
	return &Workload{
		Name: "generate", Params: ps, Units: "tokens", PerStep: n, FLOPs: LMGenerateFLOPs(cfg, n),
		Config: map[string]any{"vocab": V, "d_model": cfg.Dim, "heads": cfg.Heads, "layers": cfg.Layers, "d_ff": cfg.FFNWidth(), "context": T,
			"new_tokens": n, "batch": 1, "sampling": "greedy, key/value cache (locus sample)"},
		Step: func(int) (float64, time.Duration, error) {
			t0 := time.Now()
			_, err := gen.Generate(nil, []int{0}, n, transformer.Sampling{}, -1, rng)
			return 0, time.Since(t0), err // no loss
		},
		CacheBytes: func() int64 { return int64(gen.Held()) * 4 },
	}, nil
}
