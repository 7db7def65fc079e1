package optim

import (
	"testing"

	"github.com/locusml/locus/autodiff"
)

// BenchmarkAdamStepDAE times one Adam step (norm, update) over the parameters of the dae
// workload (784-256-64-256-784, 434k float32 values), gradients held fixed; zero-grads,
// with every gradient zero after 1000 steps of them, the moments decayed (below 1e-38,
// subnormal, without the optimizers' flush to zero: tiny.go).
func BenchmarkAdamStepDAE(b *testing.B) {
	for _, zero := range []bool{false, true} {
		name := "grads"
		if zero {
			name = "zero-grads"
		}
		b.Run(name, func(b *testing.B) { benchAdamDAE(b, zero) })
	}
}

func benchAdamDAE(b *testing.B, zero bool) {
	ps, err := autodiff.NewParams(autodiff.Float32, 1)
	if err != nil {
		b.Fatal(err)
	}
	dims := []int{784, 256, 64, 256, 784}
	for i := range len(dims) - 1 {
		for _, w := range []struct {
			name  string
			shape []int
		}{{"weight", []int{dims[i], dims[i+1]}}, {"bias", []int{dims[i+1]}}} {
			p, err := ps.Scope("l").Subf("%d", i).New(w.name, w.shape, autodiff.Normal(0, 0.1))
			if err != nil {
				b.Fatal(err)
			}
			g := p.GradFloat32s()
			for j := range g {
				g[j] = float32(j%17) * 1e-3
			}
		}
	}
	opt, err := NewAdam(All(ps.List()), DefaultAdamConfig())
	if err != nil {
		b.Fatal(err)
	}
	if zero {
		// One step with the gradients, then 1000 without: m ≈ 1e-3·0.9¹⁰⁰⁰.
		if err := opt.Step(); err != nil {
			b.Fatal(err)
		}
		for _, p := range ps.List() {
			clear(p.GradFloat32s())
		}
		for range 1000 {
			if err := opt.Step(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.SetBytes(int64(ps.NumElements()) * 4 * 7)
	for b.Loop() {
		if err := opt.Step(); err != nil {
			b.Fatal(err)
		}
	}
}
