package optim

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAdamVectorMatchesScalar checks that the float32 vector kernel (where the CPU has
// one) gives the same bits as the scalar loop, for lengths around the vector widths,
// with and without L2 and decoupled weight decay, over a few steps.
func TestAdamVectorMatchesScalar(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	mk := func(n int, sq bool) []float32 {
		x := make([]float32, n)
		for i := range x {
			e := float32(rng.NormFloat64() * math.Pow(10, rng.Float64()*6-4))
			if sq {
				e *= e
			}
			x[i] = e
		}
		return x
	}
	clone := func(x []float32) []float32 { return append([]float32(nil), x...) }
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 1000, 100003} {
		for _, mode := range []struct {
			name      string
			wd        float64
			decoupled bool
		}{{"plain", 0, false}, {"l2", 0.01, false}, {"adamw", 0.01, true}, {"adamw-nodecay", 0, true}} {
			p, m, v := mk(n, false), mk(n, false), mk(n, true)
			p2, m2, v2 := clone(p), clone(m), clone(v)
			for step := 1; step <= 3; step++ {
				g := mk(n, false)
				for i := 0; i < n; i += 97 {
					g[i] = 0 // zero gradients, with and without decay
				}
				k := adamCoefs{
					lr: 1e-3, beta1: 0.9, beta2: 0.999, eps: 1e-8,
					stepSize:  1e-3 / (1 - math.Pow(0.9, float64(step))),
					bc2Sqrt:   math.Sqrt(1 - math.Pow(0.999, float64(step))),
					wd:        mode.wd,
					decoupled: mode.decoupled,
				}
				useKern = true
				adamUpdate(p, g, m, v, nil, &k)
				useKern = false
				adamUpdate(p2, g, m2, v2, nil, &k)
				useKern = true
				for i := range p {
					if math.Float32bits(p[i]) != math.Float32bits(p2[i]) ||
						math.Float32bits(m[i]) != math.Float32bits(m2[i]) ||
						math.Float32bits(v[i]) != math.Float32bits(v2[i]) {
						t.Fatalf("n=%d %s step %d: element %d: vector p,m,v = %v,%v,%v; scalar %v,%v,%v",
							n, mode.name, step, i, p[i], m[i], v[i], p2[i], m2[i], v2[i])
					}
				}
			}
		}
	}
}
