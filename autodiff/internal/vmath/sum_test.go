package vmath

import (
	"math/rand/v2"
	"testing"
)

// TestAddTo checks y = a + b against the scalar float32 sums bit for bit on both paths,
// special values included, for lengths around the vector widths; y may alias a.
func TestAddTo(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	paths := []bool{false}
	if hasAVX2 {
		paths = append(paths, true)
	}
	defer setAVX2(hasAVX2)
	for _, avx := range paths {
		setAVX2(avx)
		for _, n := range []int{0, 1, 7, 8, 9, 31, 32, 33, 40, 1000} {
			a, b := elemInput(rng, n), elemInput(rng, n)
			y, want := make([]float32, n), make([]float32, n)
			for i := range a {
				want[i] = a[i] + b[i]
			}
			AddTo(a, b, y)
			if i := sameBits(y, want); i >= 0 {
				t.Fatalf("avx2=%v n=%d: y[%d] = %v, want %v", avx, n, i, y[i], want[i])
			}
			AddTo(a, b, a)
			if i := sameBits(a, want); i >= 0 {
				t.Fatalf("avx2=%v n=%d in place: y[%d] = %v, want %v", avx, n, i, a[i], want[i])
			}
		}
	}
}

// TestSigmoidGrad checks dx = g·y·(1 − y) against the scalar float32 expression bit for
// bit on both paths, special values included.
func TestSigmoidGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	paths := []bool{false}
	if hasAVX2 {
		paths = append(paths, true)
	}
	defer setAVX2(hasAVX2)
	for _, avx := range paths {
		setAVX2(avx)
		for _, n := range []int{0, 1, 7, 8, 9, 33, 1000} {
			y, g := elemInput(rng, n), elemInput(rng, n)
			dx, want := make([]float32, n), make([]float32, n)
			for i, s := range y {
				want[i] = g[i] * s * (1 - s)
			}
			SigmoidGrad(y, g, dx)
			if i := sameBits(dx, want); i >= 0 {
				t.Fatalf("avx2=%v n=%d: dx[%d] = %v for y %v g %v, want %v", avx, n, i, dx[i], y[i], g[i], want[i])
			}
		}
	}
}
