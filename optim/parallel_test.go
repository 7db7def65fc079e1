package optim

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/locusml/locus/autodiff"
)

// TestParallelUpdateMatchesSerial: Step's one parallel section over all the parameters'
// elements (updateAll: shares that split parameters, on 2 and 3 goroutines) gives every
// rule the same bits, parameters and state, as one serial pass (GOMAXPROCS 1), over
// parameters of sizes around the shares' edges; and sumSquares' halves add up as the
// serial sum of the halves.
func TestParallelUpdateMatchesSerial(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	sizes := []int{3, parallelMin + 5, 1, 17, 2*parallelMin + 3, 8}
	makers := map[string]func([]Group) (Optimizer, error){
		"adam": func(g []Group) (Optimizer, error) {
			c := DefaultAdamConfig()
			c.WeightDecay, c.AMSGrad = 0.01, true
			return NewAdam(g, c)
		},
		"adamw": func(g []Group) (Optimizer, error) { return NewAdamW(g, DefaultAdamWConfig()) },
		"sgd": func(g []Group) (Optimizer, error) {
			return NewSGD(g, SGDConfig{LR: 0.1, Momentum: 0.9, Nesterov: true, WeightDecay: 0.01})
		},
		"rmsprop": func(g []Group) (Optimizer, error) {
			c := DefaultRMSPropConfig()
			c.Momentum, c.Centered = 0.5, true
			return NewRMSProp(g, c)
		},
		"adagrad": func(g []Group) (Optimizer, error) { return NewAdagrad(g, DefaultAdagradConfig()) },
	}
	for name, mk := range makers {
		var ref []*autodiff.Params
		for _, procs := range []int{1, 2, 3} {
			runtime.GOMAXPROCS(procs)
			ps, err := autodiff.NewParams(autodiff.Float32, 9)
			if err != nil {
				t.Fatal(err)
			}
			for i, n := range sizes {
				if _, err := ps.Root().Subf("%d", i).New("w", []int{n}, autodiff.Normal(0, 1)); err != nil {
					t.Fatal(err)
				}
			}
			opt, err := mk(All(ps.List()))
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for range 3 {
				for _, p := range ps.List() {
					g := p.GradFloat32s()
					for i := range g {
						g[i] = float32(rng.NormFloat64())
					}
				}
				if err := opt.Step(); err != nil {
					t.Fatal(err)
				}
			}
			if procs == 1 {
				ref = append(ref, ps)
				continue
			}
			for j, p := range ps.List() {
				want := ref[0].List()[j].Float32s()
				for i, v := range p.Float32s() {
					if math.Float32bits(v) != math.Float32bits(want[i]) {
						t.Fatalf("%s, GOMAXPROCS %d: %s[%d] = %v, serial %v", name, procs, p.Name(), i, v, want[i])
					}
				}
			}
		}
	}
	g := make([]float32, 3*parallelMin+7)
	for i := range g {
		g[i] = float32(i%13) - 6
	}
	runtime.GOMAXPROCS(2)
	if a, b := sumSquares(g), sumSquaresSerial(g[:len(g)/2])+sumSquaresSerial(g[len(g)/2:]); a != b {
		t.Fatalf("sumSquares %v, halves %v", a, b)
	}
}
