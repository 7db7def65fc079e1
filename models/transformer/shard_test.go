package transformer

import (
	"math/rand/v2"
	"testing"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/layers"
	"gorgonia.org/tensor"
)

// TestShardsMatchWhole runs a batch of every architecture as parts of the batch
// (autodiff.Model.SetShards: even and uneven splits) and requires the loss, every
// parameter gradient and the logits to equal the whole batch's: to float64 round-off,
// and within 1e-5 (relative, above 1) in float32. Some targets are ignored, one
// sequence's all of them, so that the parts' losses weigh differently.
func TestShardsMatchWhole(t *testing.T) {
	const vocab, T, B = 7, 6, 5
	for _, tc := range []struct {
		name string
		arch Arch
		mut  func(*Config)
	}{
		{"lm", ArchLM, nil},
		{"lm_rotary_knn_tiled", ArchLM, func(c *Config) {
			c.Kernel, c.Bandwidth, c.Positions, c.Tiling = layers.MustParseKernelSpec("laplacian"), layers.BandwidthKNN, layers.PositionsRotary, layers.TilingAlways
		}},
		{"lm_random_features", ArchLM, func(c *Config) { c.RandomFeatures = 16 }},
		{"encoder", ArchEncoder, func(c *Config) { c.Positions = layers.PositionsSinusoidal }},
		{"encdec", ArchEncDec, nil},
	} {
		for _, dt := range []autodiff.Dtype{autodiff.Float64, autodiff.Float32} {
			t.Run(tc.name+"_"+dt.String(), func(t *testing.T) {
				ps, err := autodiff.NewParams(dt, 3)
				if err != nil {
					t.Fatal(err)
				}
				cfg := DefaultConfig(tc.arch, vocab, T)
				cfg.Dim, cfg.Heads, cfg.Layers, cfg.Hidden, cfg.Init = 8, 2, 2, 12, layers.InitTorch
				if tc.mut != nil {
					tc.mut(&cfg)
				}
				m, err := New(cfg, ps)
				if err != nil {
					t.Fatal(err)
				}
				rng := rand.New(rand.NewPCG(4, 5))
				ids := func(n int) *tensor.Dense {
					v := make([]int, n)
					for i := range v {
						v[i] = rng.IntN(vocab)
					}
					return tensor.New(tensor.WithShape(B, n/B), tensor.WithBacking(v))
				}
				tg := make([]int, B*T)
				for i := range tg {
					tg[i] = rng.IntN(vocab)
					if i < T || rng.IntN(3) == 0 {
						tg[i] = datasets.IgnoreIndex
					}
				}
				in := map[string]*tensor.Dense{InputIDs: ids(B * T), InputTargets: tensor.New(tensor.WithShape(B*T), tensor.WithBacking(tg))}
				if tc.arch == ArchEncDec {
					in[InputSource] = ids(B * (T - 2))
				}
				tol := 1e-12
				if dt == autodiff.Float32 {
					tol = 1e-5
				}
				mod := autodiff.NewModel(ps, m.Builder(), 1)
				for _, shards := range []int{2, 3} {
					for _, mode := range []autodiff.RunMode{{Backward: true}, {}} {
						d, err := autodiff.CompareShards(mod, in, mode, shards)
						if err != nil {
							t.Fatal(err)
						}
						if d.Parts != shards {
							t.Fatalf("%d shards ran %d parts", shards, d.Parts)
						}
						if d.MaxRelDiff > tol {
							t.Errorf("%d shards, backward %v: max relative difference %.3g at %s, want ≤ %g", shards, mode.Backward, d.MaxRelDiff, d.Where, tol)
						}
						t.Logf("%d shards, backward %v: max relative difference %.2g at %s", shards, mode.Backward, d.MaxRelDiff, d.Where)
					}
				}
			})
		}
	}
}
