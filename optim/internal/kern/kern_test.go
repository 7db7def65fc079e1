package kern

import (
	"math"
	"math/rand/v2"
	"testing"
)

// adamRef is the scalar reference: optim's loop, one rounding per operation.
func adamRef(p, g, m, v []float32, k *AdamCoefs) {
	for i := range p {
		if k.Mode == AdamShrink {
			p[i] *= k.Factor
		}
		d := g[i]
		if k.Mode == AdamL2 {
			d = d + float32(k.Factor*p[i])
		}
		m[i] = float32(m[i]*k.B1) + float32(k.C1*d)
		v[i] = float32(v[i]*k.B2) + float32(k.C2*d*d)
		denom := float32(math.Sqrt(float64(v[i])))/k.Bc2 + k.Eps
		p[i] = p[i] + k.NegStep*m[i]/denom
	}
}

func randSlice(rng *rand.Rand, n int, sq bool) []float32 {
	x := make([]float32, n)
	for i := range x {
		e := float32(rng.NormFloat64() * math.Pow(10, rng.Float64()*8-5))
		if sq {
			e *= e
		}
		x[i] = e
	}
	return x
}

type adamKernel struct {
	lanes int
	fn    func(p, g, m, v *float32, n int, k *AdamCoefs)
}

// kernels lists the vector kernels this CPU can run, with their widths.
func kernels() map[string]adamKernel {
	ks := map[string]adamKernel{}
	if hasAVX512 {
		ks["avx512"] = adamKernel{16, adamAVX512}
	}
	if hasAVX2 {
		ks["avx2"] = adamKernel{8, adamAVX2}
	}
	return ks
}

func TestAdamKernelsMatchScalar(t *testing.T) {
	ks := kernels()
	if len(ks) == 0 {
		t.Skip("no vector kernel on this CPU or build")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	clone := func(x []float32) []float32 { return append([]float32(nil), x...) }
	for name, kf := range ks {
		for _, n := range []int{0, 1, 15, 16, 17, 1000, 100003} {
			for mode := AdamPlain; mode <= AdamShrink; mode++ {
				k := AdamCoefs{B1: 0.9, B2: 0.999, C1: 0.1, C2: 0.001, NegStep: -3e-3, Bc2: 0.0447, Eps: 1e-8, Mode: mode}
				switch mode {
				case AdamL2:
					k.Factor = 0.01
				case AdamShrink:
					k.Factor = 1 - 1e-5
				}
				p, g, m, v := randSlice(rng, n, false), randSlice(rng, n, false), randSlice(rng, n, false), randSlice(rng, n, true)
				p2, m2, v2 := clone(p), clone(m), clone(v)
				done := n / kf.lanes * kf.lanes
				if done > 0 {
					kf.fn(&p[0], &g[0], &m[0], &v[0], done, &k)
				}
				adamRef(p[done:], g[done:], m[done:], v[done:], &k)
				adamRef(p2, g, m2, v2, &k)
				for i := range p {
					if math.Float32bits(p[i]) != math.Float32bits(p2[i]) ||
						math.Float32bits(m[i]) != math.Float32bits(m2[i]) ||
						math.Float32bits(v[i]) != math.Float32bits(v2[i]) {
						t.Fatalf("%s n=%d mode %d: element %d: got p,m,v %v,%v,%v, want %v,%v,%v",
							name, n, mode, i, p[i], m[i], v[i], p2[i], m2[i], v2[i])
					}
				}
			}
		}
	}
}

// TestSumSquaresSameOnEveryPath checks that the AVX-512, AVX2 and Go partial sums agree
// bit for bit, so the gradient norm does not depend on the CPU.
func TestSumSquaresSameOnEveryPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{0, 1, 15, 16, 17, 1000, 100003} {
		x := randSlice(rng, n, false)
		m := n &^ 15
		var want [16]float64
		sumSqGo(x[:m], &want)
		if m == 0 {
			continue
		}
		if hasAVX512 {
			var s [16]float64
			sumSqAVX512(&x[0], m, &s)
			if s != want {
				t.Fatalf("n=%d: AVX-512 partial sums %v, Go %v", n, s, want)
			}
		}
		if hasAVX2 {
			var s [16]float64
			sumSqAVX2(&x[0], m, &s)
			if s != want {
				t.Fatalf("n=%d: AVX2 partial sums %v, Go %v", n, s, want)
			}
		}
		var serial float64
		for _, e := range x {
			serial += float64(e) * float64(e)
		}
		if got := SumSquares32(x); math.Abs(got-serial) > 1e-12*serial {
			t.Fatalf("n=%d: SumSquares32 %v, serial %v", n, got, serial)
		}
	}
}

func BenchmarkSumSquares32(b *testing.B) {
	x := randSlice(rand.New(rand.NewPCG(1, 1)), 200704, false)
	b.SetBytes(int64(4 * len(x)))
	for b.Loop() {
		SumSquares32(x)
	}
}
