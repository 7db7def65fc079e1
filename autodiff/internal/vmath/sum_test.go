package vmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAddTo checks y = a + b against the scalar float32 sums bit for bit on both paths,
// special values included, for lengths around the vector widths; y may alias a.
func TestAddTo(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	onEachPath(func(avx bool) {
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
	})
}

// TestSigmoidGrad checks dx = g·y·(1 − y) against the scalar float32 expression bit for
// bit on both paths, special values included.
func TestSigmoidGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	onEachPath(func(avx bool) {
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
	})
}

// TestSqDist checks x = max(qq + kk − 2·dots, 0) against the scalar float32 expression
// bit for bit on both paths (NaN for NaN), special values included, in place too.
func TestSqDist(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 30))
	onEachPath(func(avx bool) {
		for _, n := range []int{0, 1, 7, 8, 9, 31, 32, 33, 64, 1000} {
			dots, kk := elemInput(rng, n), elemInput(rng, n)
			for i := range kk {
				kk[i] *= kk[i] // norms are >= 0
			}
			for _, qq := range []float32{0, 0.7, 3, float32(math.Inf(1)), float32(math.NaN())} {
				want, x := make([]float32, n), make([]float32, n)
				for i := range want {
					v := qq + kk[i]
					v -= 2 * dots[i]
					if v < 0 {
						v = 0
					}
					want[i] = v
				}
				SqDist(x, dots, qq, kk)
				in := append([]float32(nil), dots...)
				SqDist(in, in, qq, kk)
				for i := range want {
					for _, got := range []float32{x[i], in[i]} {
						if math.Float32bits(got) != math.Float32bits(want[i]) && !(got != got && want[i] != want[i]) {
							t.Fatalf("avx2=%v n=%d qq=%v: x[%d] = %v, want %v (dot %v, kk %v)", avx, n, qq, i, got, want[i], dots[i], kk[i])
						}
					}
				}
			}
		}
	})
}

// TestDistAndDistGrad checks Dist (√ of SqDist) and DistGrad (g / 2r, 0 where g or r is
// 0) against the scalar float32 expressions bit for bit on both paths (NaN for NaN),
// special values included.
func TestDistAndDistGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b) }
	onEachPath(func(avx bool) {
		for _, n := range []int{0, 1, 7, 8, 9, 33, 64, 1000} {
			dots, kk, g := elemInput(rng, n), elemInput(rng, n), elemInput(rng, n)
			for i := range kk {
				kk[i] *= kk[i]
			}
			const qq = 1.3
			x := make([]float32, n)
			Dist(x, dots, qq, kk)
			sq := make([]float32, n)
			SqDist(sq, dots, qq, kk)
			for i := range x {
				if want := float32(math.Sqrt(float64(sq[i]))); !same(x[i], want) {
					t.Fatalf("avx2=%v n=%d: Dist x[%d] = %v, want %v", avx, n, i, x[i], want)
				}
			}
			r := elemInput(rng, n)
			for i := range r {
				r[i] = float32(math.Abs(float64(r[i])))
				if i%5 == 1 {
					r[i] = 0
				}
			}
			got := append([]float32(nil), g...)
			DistGrad(got, r)
			for i := range got {
				want := g[i] / (2 * r[i])
				if g[i] == 0 || r[i] == 0 {
					want = 0
				}
				if !same(got[i], want) {
					t.Fatalf("avx2=%v n=%d: DistGrad g[%d] = %v, want %v (g %v, r %v)", avx, n, i, got[i], want, g[i], r[i])
				}
			}
		}
	})
}

// TestAddScaled checks y += a·x against the scalar float32 expression bit for bit on
// both paths, special values included.
func TestAddScaled(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 38))
	onEachPath(func(avx bool) {
		for _, n := range []int{0, 1, 7, 8, 9, 16, 33, 1000} {
			y, x := elemInput(rng, n), elemInput(rng, n)
			want := make([]float32, n)
			const a = 1.7
			for i := range y {
				p := float32(a * x[i])
				want[i] = y[i] + p
			}
			AddScaled(y, x, a)
			for i := range y {
				if math.Float32bits(y[i]) != math.Float32bits(want[i]) && !(y[i] != y[i] && want[i] != want[i]) {
					t.Fatalf("avx2=%v n=%d: y[%d] = %v, want %v", avx, n, i, y[i], want[i])
				}
			}
		}
	})
}

// TestAddScaledRows checks AddScaledRows against AddScaled row by row, bit for bit, on
// both paths, for widths around the vector width and rows apart by more than their width,
// and that it writes nothing between or after the rows.
func TestAddScaledRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	onEachPath(func(avx bool) {
		for _, n := range []int{1, 7, 8, 9, 16, 17, 33} {
			for _, rows := range []int{1, 2, 5} {
				ld := n + 3
				y, x := elemInput(rng, rows*ld+8), elemInput(rng, rows*ld+8)
				a := elemInput(rng, rows)
				want := append([]float32(nil), y...)
				for r := range rows {
					AddScaled(want[r*ld:r*ld+n], x[r*ld:r*ld+n], a[r])
				}
				AddScaledRows(y, x, a, ld, n)
				if i := sameBits(y, want); i >= 0 {
					t.Fatalf("avx2=%v n=%d rows=%d: y[%d] = %v, want %v", avx, n, rows, i, y[i], want[i])
				}
			}
		}
	})
	defer func() {
		if recover() == nil {
			t.Fatal("AddScaledRows took rows past the end of y")
		}
	}()
	AddScaledRows(make([]float32, 10), make([]float32, 20), make([]float32, 2), 8, 4)
}

// onEachPath runs f on the pure-Go loops and, where the CPU has them, on the AVX2 kernels,
// and leaves the kernels as it found them.
func onEachPath(f func(avx bool)) {
	defer setAVX512(hasAVX512)
	defer setAVX2(hasAVX2)
	type path struct{ avx2, avx512 bool }
	paths := []path{{false, false}}
	if hasAVX2 {
		paths = append(paths, path{true, false})
		if canAVX512() { // the kernels with a sixteen-lane loop run it
			paths = append(paths, path{true, true})
		}
	}
	for _, p := range paths {
		setAVX2(p.avx2)
		setAVX512(p.avx512)
		f(p.avx2)
	}
}

// TestLinearCoefs checks LinearCoefs against ScaleDot, DistGrad, AddSumScale and Add in
// turn, bit for bit (coefficients, the keys' sums cs, and both returned sums), for each
// term, into dst and added to it, on both paths, special values included, at lengths
// around the vector width.
func TestLinearCoefs(t *testing.T) {
	rng := rand.New(rand.NewPCG(39, 40))
	onEachPath(func(avx bool) {
		for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 33, 64, 100} {
			g0, x := elemInput(rng, n), elemInput(rng, n)
			for i := range x {
				if i%5 == 1 {
					x[i] = 0
				}
			}
			cs0, dst0 := elemInput(rng, n), elemInput(rng, n)
			for _, term := range []Term{TermDot, TermSqDist, TermDist} {
				for _, add := range []bool{false, true} {
					const c = -0.75
					// The reference: the separate loops.
					g := append([]float32(nil), g0...)
					wantCs, wantDst := append([]float32(nil), cs0...), append([]float32(nil), dst0...)
					wantGx := ScaleDot(g, x, c)
					var wantSd float32
					if term == TermDist {
						DistGrad(g, x)
					}
					if term != TermDot {
						wantSd = AddSumScale(g, wantCs, -2)
					}
					if add {
						Add(wantDst, g)
					} else {
						copy(wantDst, g)
					}
					cs, dst := append([]float32(nil), cs0...), append([]float32(nil), dst0...)
					gx, sd := LinearCoefs(dst, g0, x, cs, c, term, add)
					if i := sameBits(dst, wantDst); i >= 0 {
						t.Fatalf("avx2=%v n=%d term %d add %v: dst[%d] = %v, want %v", avx, n, term, add, i, dst[i], wantDst[i])
					}
					if i := sameBits(cs, wantCs); i >= 0 {
						t.Fatalf("avx2=%v n=%d term %d add %v: cs[%d] = %v, want %v", avx, n, term, add, i, cs[i], wantCs[i])
					}
					same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b }
					if !same(gx, wantGx) || !same(sd, wantSd) {
						t.Fatalf("avx2=%v n=%d term %d add %v: sums %v, %v, want %v, %v", avx, n, term, add, gx, sd, wantGx, wantSd)
					}
					if !add { // in place
						g2, cs2 := append([]float32(nil), g0...), append([]float32(nil), cs0...)
						LinearCoefs(g2, g2, x, cs2, c, term, false)
						if i := sameBits(g2, wantDst); i >= 0 {
							t.Fatalf("avx2=%v n=%d term %d in place: [%d] = %v, want %v", avx, n, term, i, g2[i], wantDst[i])
						}
					}
				}
			}
		}
	})
}

// TestDistCoefs checks DistCoefs against Dist (SqDist) then LinearCoefs in place, bit
// for bit (coefficients, cs, both sums), on both paths, special values included, at
// lengths around the vector width.
func TestDistCoefs(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 46))
	onEachPath(func(avx bool) {
		for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 33, 64, 100} {
			g0, dots, cs0 := elemInput(rng, n), elemInput(rng, n), elemInput(rng, n)
			kk := make([]float32, n)
			for i := range kk {
				kk[i] = float32(rng.Float64() * 3)
			}
			const qq, c = 1.75, -0.6
			for _, root := range []bool{false, true} {
				x := make([]float32, n)
				term := TermSqDist
				if root {
					Dist(x, dots, qq, kk)
					term = TermDist
				} else {
					SqDist(x, dots, qq, kk)
				}
				want, wantCs := append([]float32(nil), g0...), append([]float32(nil), cs0...)
				wantGx, wantSd := LinearCoefs(want, want, x, wantCs, c, term, false)
				g, cs := append([]float32(nil), g0...), append([]float32(nil), cs0...)
				gx, sd := DistCoefs(g, dots, qq, kk, cs, c, root)
				if i := sameBits(g, want); i >= 0 {
					t.Fatalf("avx2=%v n=%d root=%v: g[%d] = %v, want %v", avx, n, root, i, g[i], want[i])
				}
				if i := sameBits(cs, wantCs); i >= 0 {
					t.Fatalf("avx2=%v n=%d root=%v: cs[%d] = %v, want %v", avx, n, root, i, cs[i], wantCs[i])
				}
				same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b }
				if !same(gx, wantGx) || !same(sd, wantSd) {
					t.Fatalf("avx2=%v n=%d root=%v: sums %v, %v, want %v, %v", avx, n, root, gx, sd, wantGx, wantSd)
				}
			}
		}
	})
}
