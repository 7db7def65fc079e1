package optim

import (
	"fmt"
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
			for i := 3; i < n; i += 11 {
				// Moments at the edge of the subnormals, which both paths flush to zero
				// as they cross it (tiny.go).
				m[i] = float32(math.Ldexp(1+rng.Float64(), -126-rng.IntN(3))) * float32(1-2*rng.IntN(2))
				v[i] = float32(math.Ldexp(1+rng.Float64(), -126-rng.IntN(3)))
			}
			p2, m2, v2 := clone(p), clone(m), clone(v)
			for step := 1; step <= 3; step++ {
				g := mk(n, false)
				for i := 0; i < n; i += 97 {
					g[i] = 0 // zero gradients, with and without decay
				}
				for i := 3; i < n; i += 11 {
					g[i] = 0
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

// TestStateNeverSubnormal runs every optimizer's update with zero gradients until its
// state has decayed past the smallest normal number, and wants every state value, after
// every step, zero or normal: a subnormal makes each operation on it take a microcode
// assist (tiny.go), and Go leaves the processor's flush-to-zero mode off.
func TestStateNeverSubnormal(t *testing.T) {
	const n, steps = 37, 1500 // 37: the vector kernels' lanes and a scalar tail
	check := func(t *testing.T, what string, step int, xs ...[]float64) {
		t.Helper()
		for j, x := range xs {
			for i, e := range x {
				if e != 0 && math.Abs(e) < 0x1p-126 {
					t.Fatalf("%s, step %d: state %d element %d is %g, subnormal in float32", what, step, j, i, e)
				}
			}
		}
	}
	f64 := func(x []float32) []float64 {
		y := make([]float64, len(x))
		for i, e := range x {
			y[i] = float64(e)
		}
		return y
	}
	fill := func(x float32) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = x * float32(1+i%3)
		}
		return s
	}
	defer func() { useKern = true }()
	for _, kernel := range []bool{true, false} {
		for _, ams := range []bool{false, true} {
			useKern = kernel
			p, g, m, v := fill(0.1), make([]float32, n), fill(1e-3), fill(2e-38)
			var vmax []float32
			if ams {
				vmax = fill(2e-38)
			}
			for step := 1; step <= steps; step++ {
				k := adamCoefs{lr: 1e-3, beta1: 0.9, beta2: 0.999, eps: 1e-8, stepSize: 1e-3, bc2Sqrt: 1}
				adamUpdate(p, g, m, v, vmax, &k)
				check(t, fmt.Sprintf("adam, kernel %v, amsgrad %v", kernel, ams), step, f64(m), f64(v), f64(vmax))
			}
			if m[0] != 0 || v[0] != 0 {
				t.Errorf("adam, kernel %v: after %d zero gradients m, v = %g, %g, want 0", kernel, steps, m[0], v[0])
			}
		}
	}
	useKern = true
	// float64 state flushes at its own smallest normal, 2⁻¹⁰²²: start it there.
	m64, v64, p64, g64 := []float64{0x1p-1015}, []float64{0x1p-1021}, []float64{0.1}, []float64{0}
	for step := 1; step <= 200; step++ {
		adamUpdate(p64, g64, m64, v64, nil, &adamCoefs{lr: 1e-3, beta1: 0.9, beta2: 0.999, eps: 1e-8, stepSize: 1e-3, bc2Sqrt: 1})
		for _, e := range []float64{m64[0], v64[0]} {
			if e != 0 && math.Abs(e) < 0x1p-1022 {
				t.Fatalf("adam float64, step %d: state %g is subnormal", step, e)
			}
		}
	}
	p, g, buf := fill(0.1), make([]float32, n), fill(1e-3)
	for step := 1; step <= steps; step++ {
		sgdUpdate(p, g, buf, 1e-2, 0, 0.9, 0, false, false)
		check(t, "sgd momentum", step, f64(buf))
	}
	p, sq, gavg, mb := fill(0.1), fill(2e-38), fill(1e-34), fill(1e-3)
	for step := 1; step <= steps; step++ {
		rmspropUpdate(p, g, sq, gavg, mb, 1e-2, 0, 0.99, 1e-8, 0.9)
		check(t, "rmsprop", step, f64(sq), f64(gavg), f64(mb))
	}
}
