package vmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestExpShiftSum(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 9, 15, 1000, 1003} {
		buf := make([]float32, n+8)
		for i := range buf {
			buf[i] = 42 // the elements past x must stay as they are
		}
		x := buf[:n]
		for i := range x {
			x[i] = float32(i%400)/4 - 95 // [-95, 5)
		}
		if n > 5 {
			x[3], x[5] = float32(math.Inf(-1)), float32(math.NaN())
		}
		in := append([]float32(nil), x...)
		want := make([]float64, n)
		for i, v := range x {
			if a := float64(v) - 2; a >= expFloor {
				want[i] = math.Exp(a)
			}
		}
		sum := ExpShiftSum(x, 2)
		var total float64
		for i, v := range x {
			if w := want[i]; w == 0 && v != 0 || math.Abs(float64(v)-w) > 3e-7*w {
				t.Fatalf("n=%d: exp(%v) = %v, want %v", n, in[i]-2, v, w)
			}
			total += want[i]
		}
		if math.Abs(float64(sum)-total) > 1e-6*total {
			t.Fatalf("n=%d: sum %v, want %v", n, sum, total)
		}
		for _, v := range buf[n:] {
			if v != 42 {
				t.Fatalf("n=%d: wrote past the end: %v", n, buf[n:])
			}
		}
		if hasAVX2 { // the Go path sums in the same order
			old := hasAVX2
			setAVX2(false)
			y := append([]float32(nil), in...)
			goSum := ExpShiftSum(y, 2)
			setAVX2(old)
			for i := range y {
				if math.Abs(float64(y[i]-x[i])) > 3e-7*float64(x[i]) {
					t.Fatalf("n=%d: Go exp(%v) = %v, AVX2 %v", n, in[i]-2, y[i], x[i])
				}
			}
			if math.Abs(float64(goSum-sum)) > 1e-6*float64(sum) {
				t.Fatalf("n=%d: Go sum %v, AVX2 %v", n, goSum, sum)
			}
		}
	}
}

func TestExp32(t *testing.T) {
	var worst float64
	for i := -870000; i <= 880000; i++ {
		x := float32(float64(i) / 10000)
		worst = max(worst, math.Abs(float64(Exp32(x))-math.Exp(float64(x)))/math.Exp(float64(x)))
	}
	if worst > 3e-7 {
		t.Fatalf("Exp32: max relative error %g", worst)
	}
}

func TestGELUTanh(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, n := range []int{3, 8, 1001} {
		x, s, y := make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range x {
			x[i] = float32(4 * rng.NormFloat64())
		}
		x[0] = -60
		GELUTanh(x, s, y)
		for i, v := range x {
			xv := float64(v)
			ws := 1 / (1 + math.Exp(-2*sqrt2OverPi*(xv+cubic*xv*xv*xv))) // = 0.5(1 + tanh u), without cancellation
			wy := xv * ws
			// exp's argument −2u is rounded to float32, so the relative error grows with it.
			tol := 1e-6 * (1 + 2*math.Abs(sqrt2OverPi*(xv+cubic*xv*xv*xv)))
			if math.Abs(float64(y[i])-wy) > tol*math.Abs(wy) && math.Abs(float64(y[i])-wy) > 1e-30 {
				t.Fatalf("n=%d: gelu(%v) = %v, want %v", n, v, y[i], wy)
			}
			if math.Abs(float64(s[i])-ws) > tol*ws && math.Abs(float64(s[i])-ws) > 1e-30 {
				t.Fatalf("n=%d: s(%v) = %v, want %v", n, v, s[i], ws)
			}
		}
	}
}

func BenchmarkGELUTanh(b *testing.B) {
	x, s, y := make([]float32, 1<<16), make([]float32, 1<<16), make([]float32, 1<<16)
	for i := range x {
		x[i] = float32(i%1000)/100 - 5
	}
	for b.Loop() {
		GELUTanh(x, s, y)
	}
}

func TestSigmoid(t *testing.T) {
	for _, n := range []int{5, 8, 1001} {
		x, y := make([]float32, n), make([]float32, n)
		for i := range x {
			x[i] = float32(i%200)/5 - 20
		}
		Sigmoid(x, y)
		for i, v := range x {
			w := 1 / (1 + math.Exp(-float64(v)))
			if math.Abs(float64(y[i])-w) > 1e-6*w*(1+math.Abs(float64(v))) {
				t.Fatalf("sigmoid(%v) = %v, want %v", v, y[i], w)
			}
		}
	}
}

// TestGELUGrad checks GELUGrad on both paths, bit for bit, against autodiff's former
// scalar loop, and against the float64 derivative of the tanh GELU.
func TestGELUGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	for _, n := range []int{0, 1, 7, 8, 9, 33, 100} {
		x, s, g, y := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range x {
			x[i] = float32(4 * rng.NormFloat64())
			g[i] = float32(rng.NormFloat64())
		}
		GELUTanh(x, s, y)
		for _, avx := range []bool{true, false} {
			dx := make([]float32, n)
			old := hasAVX2
			setAVX2(avx && old)
			GELUGrad(x, s, g, dx)
			setAVX2(old)
			for i, v := range x {
				sg := s[i]
				want := g[i] * (sg + 2*v*sg*(1-sg)*sqrt2OverPi*(1+3*cubic*v*v))
				if math.Float32bits(dx[i]) != math.Float32bits(want) {
					t.Fatalf("n=%d AVX2 %v: dx[%d] = %v, want %v", n, avx && old, i, dx[i], want)
				}
				xv := float64(v)
				th := math.Tanh(sqrt2OverPi * (xv + cubic*xv*xv*xv))
				d64 := float64(g[i]) * (0.5*(1+th) + 0.5*xv*(1-th*th)*sqrt2OverPi*(1+3*cubic*xv*xv))
				if math.Abs(float64(dx[i])-d64) > 1e-5*(1+math.Abs(d64)) {
					t.Errorf("x=%v: dx %v, float64 %v", v, dx[i], d64)
				}
			}
		}
	}
}

// TestGELUGradOut checks GELUGradOut on both paths, bit for bit, against its scalar
// definition, and against GELUGrad with GELUTanh's s and the float64 derivative, over
// random x and the edges: zero, tiny and subnormal x (s = 0.5), x where s underflows.
func TestGELUGradOut(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	edges := []float32{0, float32(math.Copysign(0, -1)), 1e-30, -1e-30, 1e-40, -1e-45, 0x1p-64, -0x1p-64, 0x1p-63, 1e-8, -1e-8, -9, -10, -12, -20, -60, 9, 20, 60}
	for _, n := range []int{0, 1, 7, 8, 9, 33, 100, 1000} {
		x, s, g, y := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range x {
			x[i] = float32(4 * rng.NormFloat64())
			if i%3 == 0 {
				x[i] = edges[(i/3)%len(edges)]
			}
			g[i] = float32(rng.NormFloat64())
		}
		GELUTanh(x, s, y)
		kept := make([]float32, n)
		GELUGrad(x, s, g, kept)
		for _, avx := range []bool{true, false} {
			dx := make([]float32, n)
			old := hasAVX2
			setAVX2(avx && old)
			GELUGradOut(x, y, g, dx)
			setAVX2(old)
			for i, v := range x {
				sg := y[i] / v
				if math.Abs(float64(v)) < 0x1p-64 {
					sg = 0.5
				}
				want := g[i] * (sg + 2*v*sg*(1-sg)*sqrt2OverPi*(1+3*cubic*v*v))
				if math.Float32bits(dx[i]) != math.Float32bits(want) {
					t.Fatalf("n=%d AVX2 %v: dx[%d] = %v (x = %v), want %v", n, avx && old, i, dx[i], v, want)
				}
				// Near x ≈ 5, 1 − s is a few ulps of 1, and the derivative's second term
				// (up to 44·(1 − s)) turns an ulp of s into up to 5e-6: both ways alike.
				if d := math.Abs(float64(dx[i] - kept[i])); d > 1e-5*(1+math.Abs(float64(kept[i]))) {
					t.Errorf("x=%v: dx %v from y, %v from GELUTanh's s", v, dx[i], kept[i])
				}
				xv := float64(v)
				th := math.Tanh(sqrt2OverPi * (xv + cubic*xv*xv*xv))
				d64 := float64(g[i]) * (0.5*(1+th) + 0.5*xv*(1-th*th)*sqrt2OverPi*(1+3*cubic*xv*xv))
				if math.Abs(float64(dx[i])-d64) > 1e-5*(1+math.Abs(d64)) {
					t.Errorf("x=%v: dx %v, float64 %v", v, dx[i], d64)
				}
			}
		}
	}
}

// TestScaleDotAddSumScale checks ScaleDot (g = c·g, Σ g·x) and AddSumScale (acc += g,
// Σ g, g = c·g) against their scalar definitions (element i in lane i mod 8, lanes8) bit
// for bit on both paths, at lengths around the vector width.
func TestScaleDotAddSumScale(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	onEachPath(func(avx bool) {
		for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 33, 64, 1000} {
			g, x, acc := make([]float32, n), make([]float32, n), make([]float32, n)
			for i := range g {
				g[i], x[i], acc[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64()), float32(rng.NormFloat64())
			}
			const c = -2
			var sp, sg [8]float32
			wantG, wantAcc := make([]float32, n), make([]float32, n)
			for i := range g {
				sp[i&7] += float32(g[i] * x[i])
				sg[i&7] += g[i]
				wantG[i], wantAcc[i] = c*g[i], acc[i]+g[i]
			}
			wantDot, wantSum := lanes8(&sp), lanes8(&sg)
			g2 := append([]float32(nil), g...)
			if got := ScaleDot(g, x, c); math.Float32bits(got) != math.Float32bits(wantDot) {
				t.Fatalf("avx2=%v n=%d: ScaleDot sum %v, want %v", avx, n, got, wantDot)
			}
			if i := sameBits(g, wantG); i >= 0 {
				t.Fatalf("avx2=%v n=%d: ScaleDot g[%d] = %v, want %v", avx, n, i, g[i], wantG[i])
			}
			if got := AddSumScale(g2, acc, c); math.Float32bits(got) != math.Float32bits(wantSum) {
				t.Fatalf("avx2=%v n=%d: AddSumScale sum %v, want %v", avx, n, got, wantSum)
			}
			if i := sameBits(g2, wantG); i >= 0 {
				t.Fatalf("avx2=%v n=%d: AddSumScale g[%d] = %v, want %v", avx, n, i, g2[i], wantG[i])
			}
			if i := sameBits(acc, wantAcc); i >= 0 {
				t.Fatalf("avx2=%v n=%d: AddSumScale acc[%d] = %v, want %v", avx, n, i, acc[i], wantAcc[i])
			}
		}
	})
}

// TestExpScaleShiftSumScaleMax checks ExpScaleShiftSum against ExpShiftSum of the
// products c·x (the same values and sum, bit for bit, into another slice and in place),
// ExpScaleShiftAdd against their sums with what dst held, and ScaleMax against the products and their largest (NaN when one is NaN), on both
// paths, special values included, at lengths around the vector width.
func TestExpScaleShiftSumScaleMax(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 36))
	onEachPath(func(avx bool) {
		for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 33, 64, 100} {
			x := elemInput(rng, n)
			for i := range x {
				x[i] *= 20
			}
			for _, c := range []float32{1, 0.37, -2.5} {
				prod := make([]float32, n)
				want := float32(math.Inf(-1))
				for i, v := range x {
					prod[i] = c * v
					want = max(want, prod[i])
				}
				got := make([]float32, n)
				if m := ScaleMax(got, x, c); m != want && !(m != m && want != want) {
					t.Fatalf("avx2=%v n=%d c=%v: ScaleMax %v, want %v", avx, n, c, m, want)
				}
				if i := sameBits(got, prod); i >= 0 {
					t.Fatalf("avx2=%v n=%d c=%v: ScaleMax [%d] = %v, want %v", avx, n, c, i, got[i], prod[i])
				}
				const shift = 1.5
				wantSum := ExpShiftSum(prod, shift) // prod now holds the exponentials
				sum := ExpScaleShiftSum(got, x, c, shift)
				y := append([]float32(nil), x...)
				sumIn := ExpScaleShiftSum(y, y, c, shift)
				acc := elemInput(rng, n)
				wantAcc := make([]float32, n)
				for i := range acc {
					wantAcc[i] = acc[i] + prod[i]
				}
				if s := ExpScaleShiftAdd(acc, x, c, shift); math.Float32bits(s) != math.Float32bits(wantSum) {
					t.Fatalf("avx2=%v n=%d c=%v: ExpScaleShiftAdd sum %v, want %v", avx, n, c, s, wantSum)
				}
				if i := sameBits(acc, wantAcc); i >= 0 {
					t.Fatalf("avx2=%v n=%d c=%v: ExpScaleShiftAdd [%d] = %v, want %v", avx, n, c, i, acc[i], wantAcc[i])
				}
				for _, r := range []struct {
					name string
					v    []float32
					s    float32
				}{{"into another slice", got, sum}, {"in place", y, sumIn}} {
					if i := sameBits(r.v, prod); i >= 0 {
						t.Fatalf("avx2=%v n=%d c=%v %s: [%d] = %v, want %v", avx, n, c, r.name, i, r.v[i], prod[i])
					}
					if math.Float32bits(r.s) != math.Float32bits(wantSum) {
						t.Fatalf("avx2=%v n=%d c=%v %s: sum %v, want %v", avx, n, c, r.name, r.s, wantSum)
					}
				}
			}
		}
	})
}

// TestScaleAddMax checks ScaleAddMax against ScaleMax then Add and the sums' largest
// (NaN when one is NaN), bit for bit, on both paths, special values among the products and
// the addends, at lengths around the vector width, and that it writes nothing past dst.
func TestScaleAddMax(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 44))
	onEachPath(func(avx bool) {
		for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 33, 64} {
			x, b := elemInput(rng, n), elemInput(rng, n)
			if n > 3 {
				b[n-2] = float32(math.Inf(-1)) // a hidden key's bias
			}
			for _, c := range []float32{1, 0.37, -2.5} {
				want := make([]float32, n)
				ScaleMax(want, x, c)
				Add(want, b)
				wm := float32(math.Inf(-1))
				for _, v := range want {
					wm = max(wm, v)
				}
				got := append(make([]float32, n, n+8), 5, 5, 5, 5, 5, 5, 5, 5)[:n]
				m := ScaleAddMax(got, x, b, c)
				if i := sameBits(got, want); i >= 0 {
					t.Fatalf("avx2=%v n=%d c=%v: ScaleAddMax [%d] = %v, want %v", avx, n, c, i, got[i], want[i])
				}
				if m != wm && !(m != m && wm != wm) {
					t.Fatalf("avx2=%v n=%d c=%v: ScaleAddMax largest %v, want %v", avx, n, c, m, wm)
				}
				for i, v := range got[n:cap(got)] {
					if v != 5 {
						t.Fatalf("avx2=%v n=%d: ScaleAddMax wrote [%d] past dst", avx, n, n+i)
					}
				}
			}
		}
	})
}

// TestSqDistScaleMax checks SqDistScaleMax against SqDist (Dist with root) times c, bit
// for bit, and their largest (NaN when one is NaN), on both paths, special values
// included, at lengths around the vector width.
func TestSqDistScaleMax(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 38))
	onEachPath(func(avx bool) {
		for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 33, 64, 100} {
			dots, kk := elemInput(rng, n), make([]float32, n)
			for i := range kk {
				kk[i] = float32(rng.Float64() * 4)
			}
			const qq = 2.5
			for _, root := range []bool{false, true} {
				for _, c := range []float32{-0.5, 1.25} {
					want := make([]float32, n)
					if root {
						Dist(want, dots, qq, kk)
					} else {
						SqDist(want, dots, qq, kk)
					}
					m := float32(math.Inf(-1))
					for i := range want {
						want[i] *= c
						m = max(m, want[i])
					}
					e := make([]float32, n)
					got := SqDistScaleMax(e, dots, qq, kk, root, c)
					if i := sameBits(e, want); i >= 0 {
						t.Fatalf("avx2=%v n=%d root=%v c=%v: [%d] = %v, want %v", avx, n, root, c, i, e[i], want[i])
					}
					if got != m && !(got != got && m != m) {
						t.Fatalf("avx2=%v n=%d root=%v c=%v: largest %v, want %v", avx, n, root, c, got, m)
					}
				}
			}
		}
	})
}
