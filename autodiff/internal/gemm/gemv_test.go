package gemm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGemv checks the gemv path (m ≤ gemvRows) of Sgemm and Parallel, under every kernel
// this CPU runs (AVX-512, AVX2 and Go, whatever LOCUS_CPU says; Go alone with -tags
// purego), against a float64 reference: m = 1..4 rows, odd columns and depths, both
// layouts of A and B, alpha and beta, padded leading dimensions whose padding must stay
// untouched. Each element must be within float32 round-off of the exact sum: (k+2)·2⁻²³
// times the sum of the magnitudes of its terms.
func TestGemv(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	sizes := []int{1, 7, 33, 384, 1536 + 5}
	type ab struct{ alpha, beta float32 }
	for m := 1; m <= 4; m++ {
		for _, n := range sizes {
			for _, k := range sizes {
				if n*k > 1541*384 {
					continue // the largest products add nothing but time
				}
				for _, ta := range []bool{false, true} {
					for _, tb := range []bool{false, true} {
						abs := []ab{{1, 0}}
						if !ta {
							abs = append(abs, ab{1, 1}, ab{0.5, -2})
						}
						for _, s := range abs {
							checkGemv(t, rng, m, n, k, ta, tb, s.alpha, s.beta)
						}
					}
				}
			}
		}
	}
}

func checkGemv(t *testing.T, rng *rand.Rand, m, n, k int, ta, tb bool, alpha, beta float32) {
	t.Helper()
	a, lda, b, ldb, ldc := operands(rng, m, n, k, ta, tb)
	c := randSlice(rng, m*ldc)
	want := make([]float64, len(c))
	bound := make([]float64, len(c))
	for i := range m {
		for j := range n {
			var s, mag float64
			for p := range k {
				var av, bv float64
				if ta {
					av = float64(a[p*lda+i])
				} else {
					av = float64(a[i*lda+p])
				}
				if tb {
					bv = float64(b[j*ldb+p])
				} else {
					bv = float64(b[p*ldb+j])
				}
				s += av * bv
				mag += math.Abs(av * bv)
			}
			cv := float64(c[i*ldc+j])
			want[i*ldc+j] = float64(alpha)*s + float64(beta)*cv
			bound[i*ldc+j] = float64(k+2) * 0x1p-23 * (math.Abs(float64(alpha))*mag + math.Abs(float64(beta)*cv))
		}
	}
	for _, kr := range append(kernels(), extraKernels()...) {
		for _, par := range []bool{false, true} {
			got := append([]float32(nil), c...)
			if par {
				parallel(kr, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, got, ldc)
			} else {
				sgemm(kr, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, got, ldc)
			}
			for i := range got {
				if i%ldc >= n {
					if got[i] != c[i] {
						t.Fatalf("kernel %s m=%d n=%d k=%d ta=%v tb=%v par=%v: padding c[%d] changed", kr.name, m, n, k, ta, tb, par, i)
					}
					continue
				}
				if d := math.Abs(float64(got[i]) - want[i]); !(d <= bound[i]+1e-30) {
					t.Fatalf("kernel %s m=%d n=%d k=%d ta=%v tb=%v alpha=%v beta=%v par=%v: c[%d][%d] = %v, want %v (error %.3g > bound %.3g)",
						kr.name, m, n, k, ta, tb, alpha, beta, par, i/ldc, i%ldc, got[i], want[i], d, bound[i])
				}
			}
		}
	}
}

// TestGemvRows checks that the products of few rows take the gemv path and the others
// do not: with gemv's one-row functions replaced by ones that fail the test, Sgemm must
// call them for m ≤ gemvRows and only then.
func TestGemvRows(t *testing.T) {
	for _, kr := range kernels() {
		for _, tb := range []bool{false, true} {
			for m := 1; m <= 6; m++ {
				called := false
				k := *kr
				k.gemvN = func(int, int, []float32, []float32, int, []float32, bool) { called = true }
				k.gemvT = func(int, int, int, []float32, int, []float32, int, []float32, int, bool) { called = true }
				const n, depth = 40, 20
				a, b, c := make([]float32, m*depth), make([]float32, n*depth), make([]float32, m*n)
				sgemm(&k, false, tb, m, n, depth, 1, a, depth, b, map[bool]int{false: n, true: depth}[tb], 0, c, n)
				if want := m <= gemvRows(tb); called != want {
					t.Errorf("kernel %s tb=%v m=%d: gemv path taken %v, want %v", kr.name, tb, m, called, want)
				}
			}
		}
	}
}

// TestGemvSameBits checks that the gemv path (alpha = 1) has the micro-kernels' bits, so
// that a row of C does not depend on how many rows its product has (a batch run whole or
// in parts, a token generated with the cache or without): x·B and x·Bᵀ, depths across
// panels of kc, columns that are not whole vectors or panels, beta 0, 1 and another.
func TestGemvSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, kr := range append(kernels(), extraKernels()...) {
		for _, tb := range []bool{false, true} {
			for m := 1; m <= gemvRows(tb); m++ {
				for _, n := range []int{1, 7, 33, 100, 384} {
					for _, k := range []int{1, 9, 33, 256, 300, 600} {
						for _, beta := range []float32{0, 1, 0.5} {
							ldb, ldc := n+1, n+2
							if tb {
								ldb = k + 1
							}
							a, b, c := randSlice(rng, m*k), randSlice(rng, max(n, k)*ldb), randSlice(rng, m*ldc)
							got, want := append([]float32(nil), c...), append([]float32(nil), c...)
							sgemm(kr, false, tb, m, n, k, 1, a, k, b, ldb, beta, got, ldc)
							useGemv = false
							sgemm(kr, false, tb, m, n, k, 1, a, k, b, ldb, beta, want, ldc)
							useGemv = true
							for i := range got {
								if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
									t.Fatalf("kernel %s tb=%v m=%d n=%d k=%d beta=%v: c[%d][%d] = %v by gemv, %v by the micro-kernel", kr.name, tb, m, n, k, beta, i/ldc, i%ldc, got[i], want[i])
								}
							}
						}
					}
				}
			}
		}
	}
}
