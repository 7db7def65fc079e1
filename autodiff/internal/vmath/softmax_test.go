package vmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

// softmaxSteps is Softmax as the separate steps it must equal bit for bit.
func softmaxSteps(x []float32) {
	if len(x) == 0 {
		return
	}
	m := Max(x)
	switch {
	case math.IsInf(float64(m), -1):
		clear(x)
	case math.IsNaN(float64(m)) || math.IsInf(float64(m), 1):
		for i := range x {
			x[i] = float32(math.NaN())
		}
	default:
		Scale(x, 1/ExpShiftSum(x, m))
	}
}

// TestSoftmax checks Softmax on both paths against Max, ExpShiftSum and Scale (on the
// same path), bit for bit, at lengths around the vector width, with rows of ordinary,
// large, widely spread, −Inf-only and NaN/+Inf scores, and that an ordinary row sums
// to 1.
func TestSoftmax(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	ninf := float32(math.Inf(-1))
	for _, n := range []int{0, 1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 128, 129} {
		for kind := range 6 {
			x0 := make([]float32, n)
			for i := range x0 {
				x0[i] = float32(rng.NormFloat64())
				switch kind {
				case 1:
					x0[i] = 1e4 + 3*x0[i]
				case 2:
					x0[i] *= 60 // many weights below the smallest normal
				case 3:
					if i%3 == 1 {
						x0[i] = ninf // masked keys
					}
				case 4:
					x0[i] = ninf
				case 5:
					if i == n/2 {
						x0[i] = []float32{float32(math.NaN()), float32(math.Inf(1))}[n%2]
					}
				}
			}
			for _, avx := range []bool{true, false} {
				old := hasAVX2
				setAVX2(avx && old)
				got, want := append([]float32(nil), x0...), append([]float32(nil), x0...)
				Softmax(got)
				softmaxSteps(want)
				setAVX2(old)
				if i := sameBits(got, want); i >= 0 {
					t.Fatalf("n=%d kind %d AVX2 %v: x[%d] = %v, want %v", n, kind, avx && old, i, got[i], want[i])
				}
				if kind == 0 && n > 0 {
					var s float64
					for _, v := range got {
						s += float64(v)
					}
					if math.Abs(s-1) > 1e-6 {
						t.Fatalf("n=%d AVX2 %v: weights sum to %v", n, avx && old, s)
					}
				}
			}
		}
	}
}

// BenchmarkSoftmax runs Softmax against its separate steps on the causal rows of a
// block of 64 queries (lengths 1..64), as attention's forward pass normalises them.
func BenchmarkSoftmax(b *testing.B) {
	rng := rand.New(rand.NewPCG(27, 28))
	x0 := make([]float32, 64*64)
	for i := range x0 {
		x0[i] = float32(rng.NormFloat64())
	}
	x := make([]float32, len(x0))
	for _, c := range []struct {
		name string
		f    func([]float32)
	}{{"fused", Softmax}, {"steps", softmaxSteps}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				copy(x, x0)
				for t := range 64 {
					c.f(x[t*64 : t*64+t+1])
				}
			}
		})
	}
}
