package vmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestScoreGrad checks ScoreGrad on both paths against its scalar definition, bit for
// bit, special values included, at lengths around the vector width.
func TestScoreGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 100, 128} {
		p, d0 := elemInput(rng, n), elemInput(rng, n)
		for _, c := range []struct{ delta, scale float32 }{{0.37, 0.25}, {-1.5, 0.7}, {float32(math.NaN()), 1}} {
			for _, avx := range []bool{true, false} {
				d := append([]float32(nil), d0...)
				old := hasAVX2
				setAVX2(avx && old)
				ScoreGrad(d, p, c.delta, c.scale)
				setAVX2(old)
				want := make([]float32, n)
				for i := range want {
					want[i] = c.scale * p[i] * (d0[i] - c.delta)
				}
				if i := sameBits(d, want); i >= 0 {
					t.Fatalf("n=%d delta %v AVX2 %v: d[%d] = %v, want %v", n, c.delta, avx && old, i, d[i], want[i])
				}
			}
		}
	}
}

// TestScoreGradSum checks ScoreGradSum on both paths against its scalar definition (the
// values ScoreGrad gives, their sum with element i in lane i mod 8, then lanes8), bit
// for bit, into another slice and in place, at lengths around the vector width.
func TestScoreGradSum(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	onEachPath(func(avx bool) {
		for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 100} {
			p, d0 := elemInput(rng, n), elemInput(rng, n)
			for _, c := range []struct{ delta, scale float32 }{{0.37, 0.25}, {-1.5, 0.7}, {float32(math.Inf(1)), 1}} {
				want := make([]float32, n)
				var s [8]float32
				for i := range want {
					want[i] = c.scale * p[i] * (d0[i] - c.delta)
					s[i&7] += want[i]
				}
				wantSum := lanes8(&s)
				for _, inPlace := range []bool{false, true} {
					d := append([]float32(nil), d0...)
					dst := make([]float32, n)
					if inPlace {
						dst = d
					}
					got := ScoreGradSum(dst, d, p, c.delta, c.scale)
					if i := sameBits(dst, want); i >= 0 {
						t.Fatalf("avx2=%v n=%d delta %v in place %v: dst[%d] = %v, want %v", avx, n, c.delta, inPlace, i, dst[i], want[i])
					}
					if math.Float32bits(got) != math.Float32bits(wantSum) && !(got != got && wantSum != wantSum) {
						t.Fatalf("avx2=%v n=%d delta %v in place %v: sum %v, want %v", avx, n, c.delta, inPlace, got, wantSum)
					}
				}
			}
		}
	})
}

// TestScaleTo checks ScaleTo on both paths against a·x, bit for bit, into another slice
// and in place (Scale).
func TestScaleTo(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	onEachPath(func(avx bool) {
		for _, n := range []int{0, 1, 7, 8, 9, 17, 33, 100} {
			x := elemInput(rng, n)
			const a = -0.3
			want := make([]float32, n)
			for i := range want {
				want[i] = a * x[i]
			}
			dst := make([]float32, n)
			ScaleTo(dst, x, a)
			if i := sameBits(dst, want); i >= 0 {
				t.Fatalf("avx2=%v n=%d: ScaleTo [%d] = %v, want %v", avx, n, i, dst[i], want[i])
			}
			Scale(x, a)
			if i := sameBits(x, want); i >= 0 {
				t.Fatalf("avx2=%v n=%d: Scale [%d] = %v, want %v", avx, n, i, x[i], want[i])
			}
		}
	})
}

// TestExpScoreGrad checks ExpScoreGrad against ExpScaleShiftSum then ScoreGradSum, bit
// for bit (values and sum), on both paths, special values included, at lengths around
// the vector width.
func TestExpScoreGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 30))
	onEachPath(func(avx bool) {
		for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 33, 64, 100} {
			x, d := elemInput(rng, n), elemInput(rng, n)
			for _, c := range []struct{ c, shift, delta, f float32 }{{0.5, 1.5, 0.25, 0.8}, {-2, -3, -1, 1.5}} {
				e := make([]float32, n)
				ExpScaleShiftSum(e, x, c.c, c.shift)
				want := make([]float32, n)
				wantSum := ScoreGradSum(want, d, e, c.delta, c.f)
				g := make([]float32, n)
				got := ExpScoreGrad(g, x, d, c.c, c.shift, c.delta, c.f)
				if i := sameBits(g, want); i >= 0 {
					t.Fatalf("avx2=%v n=%d %+v: [%d] = %v, want %v", avx, n, c, i, g[i], want[i])
				}
				if math.Float32bits(got) != math.Float32bits(wantSum) && !(got != got && wantSum != wantSum) {
					t.Fatalf("avx2=%v n=%d %+v: sum %v, want %v", avx, n, c, got, wantSum)
				}
			}
		}
	})
}

// TestScoreGradSub checks ScoreGradSub against ScoreGradSum at scale 1 then AddScaled by
// −1, bit for bit (values and sum), on both paths, special values included, at lengths
// around the vector width.
func TestScoreGradSub(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	onEachPath(func(avx bool) {
		for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 33, 64, 100} {
			d0, p, sub := elemInput(rng, n), elemInput(rng, n), elemInput(rng, n)
			for _, delta := range []float32{0.3, -1.25} {
				want := append([]float32(nil), d0...)
				wantSum := ScoreGradSum(want, want, p, delta, 1)
				AddScaled(want, sub, -1)
				d := append([]float32(nil), d0...)
				got := ScoreGradSub(d, p, sub, delta)
				for i := range d { // bit for bit; a NaN's payload may differ
					if math.Float32bits(d[i]) != math.Float32bits(want[i]) && !(d[i] != d[i] && want[i] != want[i]) {
						t.Fatalf("avx2=%v n=%d delta %v: [%d] = %v, want %v", avx, n, delta, i, d[i], want[i])
					}
				}
				if math.Float32bits(got) != math.Float32bits(wantSum) && !(got != got && wantSum != wantSum) {
					t.Fatalf("avx2=%v n=%d delta %v: sum %v, want %v", avx, n, delta, got, wantSum)
				}
			}
		}
	})
}
