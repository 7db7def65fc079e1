package vmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

func elemInput(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e-45, -1e-45}
	for i := range x {
		if i%11 == 3 {
			x[i] = special[rng.IntN(len(special))]
		} else {
			x[i] = float32(rng.NormFloat64())
		}
	}
	return x
}

// sameBits returns the first index where a and b differ bit for bit, any NaN matching
// any NaN (which operand's NaN an operation passes on depends on the operands' order, not
// the value), or −1.
func sameBits(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) && !(a[i] != a[i] && b[i] != b[i]) {
			return i
		}
	}
	return -1
}

// TestElementwiseMatchScalar checks the vector ReLU, ReLUGrad and ScaledDiff against
// their scalar definitions bit for bit, special values included.
func TestElementwiseMatchScalar(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 1000, 100003} {
		x, g, tg := elemInput(rng, n), elemInput(rng, n), elemInput(rng, n)
		y, want := make([]float32, n), make([]float32, n)
		ReLU(x, y)
		for i, v := range x {
			if v >= 0 {
				want[i] = v
			} else {
				want[i] = v * 0
			}
		}
		if i := sameBits(y, want); i >= 0 {
			t.Fatalf("ReLU n=%d: y[%d] = %v for x %v, want %v", n, i, y[i], x[i], want[i])
		}
		ReLUGrad(x, g, y)
		for i, v := range x {
			if v >= 0 {
				want[i] = g[i]
			} else {
				want[i] = g[i] * 0
			}
		}
		if i := sameBits(y, want); i >= 0 {
			t.Fatalf("ReLUGrad n=%d: dx[%d] = %v for x %v g %v, want %v", n, i, y[i], x[i], g[i], want[i])
		}
		const c = -2.0 / 3 * 1e-3
		ScaledDiff(x, tg, c, y)
		for i := range x {
			want[i] = float32(c * (float64(x[i]) - float64(tg[i])))
		}
		if i := sameBits(y, want); i >= 0 {
			t.Fatalf("ScaledDiff n=%d: d[%d] = %v, want %v", n, i, y[i], want[i])
		}
	}
}

// TestSqDiffSumSameOnEveryPath checks that the AVX2 partial sums equal the Go ones bit
// for bit and the total is close to the serial sum.
func TestSqDiffSumSameOnEveryPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{0, 1, 15, 16, 17, 1000, 100003} {
		p, q := make([]float32, n), make([]float32, n)
		for i := range p {
			p[i], q[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
		}
		got := SqDiffSum(p, q)
		var serial float64
		for i := range p {
			d := float64(p[i]) - float64(q[i])
			serial += d * d
		}
		if math.Abs(got-serial) > 1e-12*serial {
			t.Fatalf("n=%d: SqDiffSum %v, serial %v", n, got, serial)
		}
		if hasAVX2 {
			old := hasAVX2
			setAVX2(false)
			goSum := SqDiffSum(p, q)
			setAVX2(old)
			if math.Float64bits(goSum) != math.Float64bits(got) {
				t.Fatalf("n=%d: AVX2 sum %v, Go sum %v", n, got, goSum)
			}
		}
	}
}

// TestMaxScaleShift checks Max (NaN of either sign wins, −Inf for none), Scale, Shift and
// ScaleFlush (at a factor that puts many products below the smallest normal) on both
// paths, bit for bit.
func TestMaxScaleShift(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	negNaN := math.Float32frombits(0xffc00000) // the NaN x86 arithmetic makes
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 130} {
		for _, special := range []float32{0, float32(math.NaN()), negNaN, float32(math.Inf(1)), float32(math.Inf(-1))} {
			for _, at := range []int{0, n / 2, n - 1} {
				x := make([]float32, n)
				want := float32(math.Inf(-1))
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
				if special != 0 && n > 0 {
					x[at] = special
				}
				for _, v := range x {
					want = max(want, v)
				}
				for _, avx := range []bool{true, false} {
					old := hasAVX2
					setAVX2(avx && old)
					got := Max(x)
					setAVX2(old)
					if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
						t.Fatalf("n=%d, %v at %d, AVX2 %v: Max = %v, want %v", n, special, at, avx && old, got, want)
					}
				}
			}
		}
		x := elemInput(rng, n)
		want := make([]float32, n)
		for i, v := range x {
			want[i] = 0.37 * v
		}
		for _, avx := range []bool{true, false} {
			y := append([]float32(nil), x...)
			old := hasAVX2
			setAVX2(avx && old)
			Scale(y, 0.37)
			setAVX2(old)
			if i := sameBits(y, want); i >= 0 {
				t.Fatalf("n=%d, AVX2 %v: Scale: y[%d] = %v, want %v", n, avx && old, i, y[i], want[i])
			}
		}
		for i, v := range x {
			want[i] = v + 0.37
		}
		for _, avx := range []bool{true, false} {
			y := append([]float32(nil), x...)
			old := hasAVX2
			setAVX2(avx && old)
			Shift(y, 0.37)
			setAVX2(old)
			if i := sameBits(y, want); i >= 0 {
				t.Fatalf("n=%d, AVX2 %v: Shift: y[%d] = %v, want %v", n, avx && old, i, y[i], want[i])
			}
		}
		for i := 5; i < n; i += 16 { // a NaN in every vector stays
			x[i] = float32(math.NaN())
		}
		for i, v := range x {
			want[i] = 1e-38 * v
			if want[i] < 0x1p-126 {
				want[i] = 0
			}
		}
		onEachPath(func(avx bool) {
			y := append(append([]float32(nil), x...), 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5)
			ScaleFlush(y[:n], 1e-38)
			for i, v := range y[n:] {
				if v != 5 {
					t.Fatalf("n=%d, AVX2 %v, AVX-512 %v: ScaleFlush wrote y[%d] = %v past the slice", n, avx, hasAVX512, n+i, v)
				}
			}
			y = y[:n]
			for i := range y {
				if math.Float32bits(y[i]) != math.Float32bits(want[i]) && !(y[i] != y[i] && want[i] != want[i]) {
					t.Fatalf("n=%d, AVX2 %v, AVX-512 %v: ScaleFlush: y[%d] = %v, want %v", n, avx, hasAVX512, i, y[i], want[i])
				}
			}
		})
	}
}

// TestAdd checks Add on both paths against the scalar sum, bit for bit, at lengths
// around the vector widths.
func TestAdd(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for _, n := range []int{0, 1, 7, 8, 9, 31, 32, 33, 40, 64, 100, 257} {
		x := make([]float32, n+3)
		d0 := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		for i := range d0 {
			d0[i] = float32(rng.NormFloat64())
		}
		for _, avx := range []bool{true, false} {
			d := append([]float32(nil), d0...)
			old := hasAVX2
			setAVX2(avx && old)
			Add(d, x)
			setAVX2(old)
			for i := range d {
				if want := d0[i] + x[i]; math.Float32bits(d[i]) != math.Float32bits(want) {
					t.Fatalf("n=%d AVX2 %v: d[%d] = %v, want %v", n, avx && old, i, d[i], want)
				}
			}
		}
	}
}

// TestRecip1pRatioGrad checks Recip1p and RatioGrad against their scalar definitions, bit
// for bit (RatioGrad's sum in ScaleDot's lanes), on both paths, special values included,
// at lengths around the vector width.
func TestRecip1pRatioGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	onEachPath(func(avx bool) {
		for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 33, 64, 100} {
			x, g := elemInput(rng, n), elemInput(rng, n)
			const c, a = 0.37, 1.5
			want := make([]float32, n)
			for i, v := range x {
				want[i] = 1 / (1 + float32(v*c))
			}
			k := make([]float32, n)
			Recip1p(k, x, c)
			if i := sameBits(k, want); i >= 0 {
				t.Fatalf("avx2=%v n=%d: Recip1p [%d] = %v, want %v", avx, n, i, k[i], want[i])
			}
			var s [8]float32
			wantG := make([]float32, n)
			for i, v := range g {
				f := v / (a + x[i])
				s[i&7] += float32(f * x[i])
				wantG[i] = -f
			}
			wantSum := lanes8(&s)
			got := RatioGrad(g, x, a)
			if i := sameBits(g, wantG); i >= 0 {
				t.Fatalf("avx2=%v n=%d: RatioGrad [%d] = %v, want %v", avx, n, i, g[i], wantG[i])
			}
			if math.Float32bits(got) != math.Float32bits(wantSum) && !(got != got && wantSum != wantSum) {
				t.Fatalf("avx2=%v n=%d: RatioGrad sum %v, want %v", avx, n, got, wantSum)
			}
		}
	})
}
