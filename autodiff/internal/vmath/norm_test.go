package vmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

// normRef are the LayerNorm row kernels written as plain loops in the documented
// order: sums over the sixteen residues, combined pairwise, then the tail.
func sumRef(n int, term func(i int) float64) float64 {
	m := n &^ 15
	var s [16]float64
	for i := 0; i < m; i++ {
		s[i%16] = s[i%16] + term(i)
	}
	r := combine16(&s)
	for i := m; i < n; i++ {
		r = r + term(i)
	}
	return r
}

func sameBits64(a, b []float64) int {
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return i
		}
	}
	return -1
}

// TestNormKernels checks every LayerNorm row kernel against its scalar definition bit for
// bit, on the AVX2 path (where the CPU has it) and on the Go path, for lengths around
// the vector widths, and the sums against a sequential float64 sum.
func TestNormKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	paths := []bool{false}
	if hasAVX2 {
		paths = append(paths, true)
	}
	defer setAVX2(hasAVX2)
	for _, n := range []int{0, 1, 3, 4, 5, 15, 16, 17, 31, 64, 67, 256, 1000} {
		x, g, w, b := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range x {
			x[i] = float32(3*rng.NormFloat64() + 2)
			g[i] = float32(rng.NormFloat64() * 1e-3)
			w[i] = float32(1 + 0.3*rng.NormFloat64())
			b[i] = float32(rng.NormFloat64())
		}
		mu, rstd := 1.75, 0.4
		m1, m2 := 2e-4, -3e-4
		for _, avx := range paths {
			setAVX2(avx)
			if got, want := Sum64(x), sumRef(n, func(i int) float64 { return float64(x[i]) }); math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("avx2=%v n=%d: Sum64 %v, want %v", avx, n, got, want)
			}
			var serial float64
			for _, v := range x {
				serial += float64(v)
			}
			if d := math.Abs(Sum64(x) - serial); d > 1e-12*float64(n) {
				t.Fatalf("avx2=%v n=%d: Sum64 %v, sequential %v", avx, n, Sum64(x), serial)
			}
			want := sumRef(n, func(i int) float64 { d := float64(x[i]) - mu; return d * d })
			if got := SqDev64(x, mu); math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("avx2=%v n=%d: SqDev64 %v, want %v", avx, n, got, want)
			}
			s1w := sumRef(n, func(i int) float64 { return float64(g[i]) * float64(w[i]) })
			s2w := sumRef(n, func(i int) float64 {
				return float64(g[i]) * float64(w[i]) * ((float64(x[i]) - mu) * rstd)
			})
			if s1, s2 := NormGradSums(x, g, w, mu, rstd); math.Float64bits(s1) != math.Float64bits(s1w) || math.Float64bits(s2) != math.Float64bits(s2w) {
				t.Fatalf("avx2=%v n=%d: NormGradSums %v %v, want %v %v", avx, n, s1, s2, s1w, s2w)
			}
			for _, bias := range []bool{true, false} {
				y, ref := make([]float32, n), make([]float32, n)
				var bb []float32
				if bias {
					bb = b
				}
				NormAffine(x, w, bb, y, mu, rstd)
				for i := range x {
					v := (float64(x[i]) - mu) * rstd * float64(w[i])
					if bias {
						v += float64(b[i])
					}
					ref[i] = float32(v)
				}
				if i := sameBits(y, ref); i >= 0 {
					t.Fatalf("avx2=%v n=%d bias=%v: NormAffine y[%d] = %v, want %v", avx, n, bias, i, y[i], ref[i])
				}
				dw, db := make([]float64, n), make([]float64, n)
				rw, rb := make([]float64, n), make([]float64, n)
				for i := range dw {
					dw[i], db[i] = float64(i), -float64(i)
					rw[i], rb[i] = dw[i]+float64(g[i])*(float64(x[i])-mu)*rstd, db[i]+float64(g[i])
				}
				var dbArg []float64
				if bias {
					dbArg = db
				} else {
					copy(rb, db)
				}
				NormParamGradAdd(x, g, mu, rstd, dw, dbArg)
				if i := sameBits64(dw, rw); i >= 0 {
					t.Fatalf("avx2=%v n=%d bias=%v: NormParamGradAdd dw[%d] = %v, want %v", avx, n, bias, i, dw[i], rw[i])
				}
				if i := sameBits64(db, rb); i >= 0 {
					t.Fatalf("avx2=%v n=%d bias=%v: NormParamGradAdd db[%d] = %v, want %v", avx, n, bias, i, db[i], rb[i])
				}
			}
			dx, ref := make([]float32, n), make([]float32, n)
			NormGrad(x, g, w, dx, mu, rstd, m1, m2)
			for i := range x {
				dh := float64(g[i]) * float64(w[i])
				h := (float64(x[i]) - mu) * rstd
				ref[i] = float32(rstd * (dh - m1 - h*m2))
			}
			if i := sameBits(dx, ref); i >= 0 {
				t.Fatalf("avx2=%v n=%d: NormGrad dx[%d] = %v, want %v", avx, n, i, dx[i], ref[i])
			}
		}
	}
}

func BenchmarkLayerNormRow64(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 64
	x, w, bb, y := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], w[i], bb[i] = float32(rng.NormFloat64()), 1, 0
	}
	for b.Loop() {
		mu := Sum64(x) / n
		rstd := 1 / math.Sqrt(SqDev64(x, mu)/n+1e-5)
		NormAffine(x, w, bb, y, mu, rstd)
	}
}

// TestLayerNormRow checks the one-call row kernels against the compositions they
// replace, bit for bit, on both paths (rows of a multiple of 16 take the single vector
// call; the others the composition itself).
func TestLayerNormRow(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	paths := []bool{false}
	if hasAVX2 {
		paths = append(paths, true)
	}
	defer setAVX2(hasAVX2)
	for _, n := range []int{1, 5, 16, 17, 32, 64, 80, 256} {
		x, g, w, b := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range x {
			x[i] = float32(3*rng.NormFloat64() + 2)
			g[i] = float32(rng.NormFloat64() * 1e-3)
			w[i] = float32(1 + 0.3*rng.NormFloat64())
			b[i] = float32(rng.NormFloat64())
		}
		x[n/2] = 1e30 // a wide range of magnitudes in one row
		const eps = 1e-5
		for _, avx := range paths {
			setAVX2(avx)
			for _, bias := range []bool{true, false} {
				var bb []float32
				if bias {
					bb = b
				}
				y, ref := make([]float32, n), make([]float32, n)
				mu, rstd := LayerNormRow(x, w, bb, y, eps)
				nf := float64(n)
				rmu := Sum64(x) / nf
				rrstd := 1 / math.Sqrt(SqDev64(x, rmu)/nf+eps)
				NormAffine(x, w, bb, ref, rmu, rrstd)
				if math.Float64bits(mu) != math.Float64bits(rmu) || math.Float64bits(rstd) != math.Float64bits(rrstd) {
					t.Fatalf("avx2=%v n=%d: mean, rstd %v %v, want %v %v", avx, n, mu, rstd, rmu, rrstd)
				}
				if i := sameBits(y, ref); i >= 0 {
					t.Fatalf("avx2=%v n=%d bias=%v: y[%d] = %v, want %v", avx, n, bias, i, y[i], ref[i])
				}
			}
			dx, ref := make([]float32, n), make([]float32, n)
			mu, rstd := 1.5, 0.25
			LayerNormRowGrad(x, g, w, dx, mu, rstd)
			s1, s2 := NormGradSums(x, g, w, mu, rstd)
			NormGrad(x, g, w, ref, mu, rstd, s1/float64(n), s2/float64(n))
			if i := sameBits(dx, ref); i >= 0 {
				t.Fatalf("avx2=%v n=%d: dx[%d] = %v, want %v", avx, n, i, dx[i], ref[i])
			}
		}
	}
}

func BenchmarkLayerNormRowOneCall(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 64
	x, w, bb, y := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], w[i], bb[i] = float32(rng.NormFloat64()), 1, 0
	}
	for b.Loop() {
		LayerNormRow(x, w, bb, y, 1e-5)
	}
}

// TestSqNorms checks SqNorms against its scalar definition bit for bit on both paths,
// for widths around the vector width and rows apart by more than their width.
func TestSqNorms(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 44))
	onEachPath(func(avx bool) {
		for _, d := range []int{1, 7, 8, 9, 16, 17, 64} {
			const rows = 5
			ld := d + 3
			x := elemInput(rng, (rows-1)*ld+d)
			want := make([]float32, rows)
			for r := range want {
				var s [8]float32
				for i, v := range x[r*ld : r*ld+d] {
					s[i&7] += float32(v * v)
				}
				want[r] = lanes8(&s)
			}
			got := make([]float32, rows)
			SqNorms(got, x, d, ld)
			if i := sameBits(got, want); i >= 0 {
				t.Fatalf("avx2=%v d=%d: row %d: %v, want %v", avx, d, i, got[i], want[i])
			}
		}
	})
}
