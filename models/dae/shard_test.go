package dae

import (
	"math/rand/v2"
	"testing"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/layers"
	"gorgonia.org/tensor"
)

// TestShardsMatchWhole runs a batch of the MLP and the localized DAE as parts of the
// batch (autodiff.Model.SetShards, even and uneven splits; a localized DAE whose kernel
// has position factors runs whole, since its images are positions) and requires the loss, every
// parameter and input gradient and the reconstructions to equal the whole batch's: to
// float64 round-off, and within 1e-5 (relative, above 1) in float32.
func TestShardsMatchWhole(t *testing.T) {
	spec := layers.MustParseKernelSpec("gaussian")
	positional := layers.MustParseKernelSpec("laplacian * window(3) * relbias(2)")
	for _, cfg := range []Config{
		{Kind: KindMLP, In: 6, Hidden: []int{5, 3, 4}, Noise: NoiseGaussian, Sigma: 0.3},
		{Kind: KindLocalized, In: 6, Levels: 2, Prototypes: 5, Heads: 2, Width: 4, Kernel: &spec, InitBandwidth: 0.7, MinBandwidth: 0.05, Noise: NoiseGaussian, Sigma: 0.3},
		{Kind: KindLocalized, In: 6, Levels: 2, Prototypes: 5, Heads: 2, Width: 4, Kernel: &positional, InitBandwidth: 0.7, MinBandwidth: 0.05, Noise: NoiseGaussian, Sigma: 0.3},
	} {
		for _, dt := range []autodiff.Dtype{autodiff.Float64, autodiff.Float32} {
			name := cfg.Kind
			if cfg.Kernel != nil {
				name += "_" + cfg.Kernel.String()
			}
			t.Run(name+"_"+dt.String(), func(t *testing.T) {
				ps, err := autodiff.NewParams(dt, 3)
				if err != nil {
					t.Fatal(err)
				}
				m, err := New(cfg, ps)
				if err != nil {
					t.Fatal(err)
				}
				const B = 7
				rng := rand.New(rand.NewPCG(5, 6))
				img := func() *tensor.Dense {
					v := randImages(rng, B, cfg.In)
					if dt == autodiff.Float32 {
						f := make([]float32, len(v))
						for i, x := range v {
							f[i] = float32(x)
						}
						return tensor.New(tensor.WithShape(B, cfg.In), tensor.WithBacking(f))
					}
					return tensor.New(tensor.WithShape(B, cfg.In), tensor.WithBacking(v))
				}
				in := map[string]*tensor.Dense{"noisy": img(), "clean": img()}
				tol := 1e-12
				if dt == autodiff.Float32 {
					tol = 1e-5
				}
				mod := autodiff.NewModel(ps, m.Builder(), 1)
				for _, shards := range []int{2, 3} {
					for _, mode := range []autodiff.RunMode{{Backward: true, InputGrads: true}, {}} {
						d, err := autodiff.CompareShards(mod, in, mode, shards)
						if err != nil {
							t.Fatal(err)
						}
						// A kernel with position factors places the images as positions
						// 0…B−1: such a batch must run whole.
						want := shards
						if cfg.Kernel != nil && layers.HasPositions(cfg.Kernel.Kernel) {
							want = 1
						}
						if d.Parts != want {
							t.Fatalf("%d shards ran %d parts, want %d", shards, d.Parts, want)
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
