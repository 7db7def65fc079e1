package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"

	"github.com/locusml/locus/internal/par"
	"github.com/locusml/locus/internal/simd"
)

func naive(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	for i := range m {
		for j := range n {
			var s float64
			for p := range k {
				var av, bv float32
				if transA {
					av = a[p*lda+i]
				} else {
					av = a[i*lda+p]
				}
				if transB {
					bv = b[j*ldb+p]
				} else {
					bv = b[p*ldb+j]
				}
				s += float64(av) * float64(bv)
			}
			c[i*ldc+j] = float32(float64(alpha)*s + float64(beta)*float64(c[i*ldc+j]))
		}
	}
}

func randSlice(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// operands returns random op(A) (m×k) and op(B) (k×n) as stored, with padded leading
// dimensions, and a C row stride past n.
func operands(rng *rand.Rand, m, n, k int, ta, tb bool) (a []float32, lda int, b []float32, ldb, ldc int) {
	lda, ldb, ldc = k+3, n+1, n+2
	arows, brows := m, k
	if ta {
		lda, arows = m+3, k
	}
	if tb {
		ldb, brows = k+1, n
	}
	return randSlice(rng, arows*lda), lda, randSlice(rng, brows*ldb), ldb, ldc
}

// withKernel runs f with kr as the active micro-kernel.
func withKernel(kr *microKernel, f func()) {
	old := active
	active = kr
	defer func() { active = old }()
	f()
}

func TestKernels(t *testing.T) {
	ks := kernels()
	if ks[len(ks)-1] != goKernel {
		t.Fatalf("the pure-Go kernel is not the last resort")
	}
	// The best this CPU has, or the best LOCUS_CPU allows.
	if want := best(ks, simd.Current()); active != want {
		t.Fatalf("active kernel %s, want %s (LOCUS_CPU %q)", active.name, want.name, os.Getenv("LOCUS_CPU"))
	}
	for _, kr := range ks {
		if kr.mr > maxMR || kr.nr > maxNR || mc%kr.mr != 0 || nc%kr.nr != 0 {
			t.Errorf("kernel %s: tile %d×%d does not fit the blocking", kr.name, kr.mr, kr.nr)
		}
		t.Logf("kernel %s: %d×%d, direct %v", kr.name, kr.mr, kr.nr, kr.direct != nil)
		for _, k := range []*microKernel{kr, kr.narrow} {
			if k == nil {
				continue
			}
			prev := 0
			for _, tk := range k.tails {
				if tk.mr <= prev || tk.mr >= k.mr || tk.nr != k.nr || tk.level != k.level || tk.direct == nil || tk.directT == nil || k.direct == nil {
					t.Errorf("kernel %s %d×%d: tail %d×%d (level %v) does not fit", k.name, k.mr, k.nr, tk.mr, tk.nr, tk.level)
				}
				prev = tk.mr
			}
		}
	}
	for _, kr := range append(ks, extraKernels()...) {
		if nk := kr.narrow; nk != nil {
			// Sgemm swaps it in for the whole product: fewer columns, instructions that
			// kr's level allows.
			t.Logf("kernel %s: narrow %s %d×%d", kr.name, nk.name, nk.mr, nk.nr)
			if nk.nr >= kr.nr || nk.level > kr.level || mc%nk.mr != 0 || nc%nk.nr != 0 || nk.narrow != nil {
				t.Errorf("kernel %s: narrow kernel %d×%d (level %v) does not fit %d×%d", kr.name, nk.mr, nk.nr, nk.level, kr.mr, kr.nr)
			}
			if (kr.direct == nil) != (nk.direct == nil) || (kr.directT == nil) != (nk.directT == nil) {
				t.Errorf("kernel %s: the narrow kernel reads A otherwise", kr.name)
			}
		}
	}
}

// checkSgemm compares Sgemm and Parallel, under every available micro-kernel, with a
// float64 reference on random inputs with padded leading dimensions.
func checkSgemm(t *testing.T, rng *rand.Rand, m, n, k int, ta, tb bool, alpha, beta float32) {
	t.Helper()
	a, lda, b, ldb, ldc := operands(rng, m, n, k, ta, tb)
	c := randSlice(rng, m*ldc)
	want := append([]float32(nil), c...)
	naive(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, want, ldc)
	for _, kr := range append(kernels(), extraKernels()...) {
		for _, par := range []bool{false, true} {
			got := append([]float32(nil), c...)
			withKernel(kr, func() {
				if par {
					Parallel(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, got, ldc)
				} else {
					Sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, got, ldc)
				}
			})
			for i := range got {
				if d := math.Abs(float64(got[i] - want[i])); !(d <= 1e-4*math.Sqrt(float64(k)+1)*(1+math.Abs(float64(want[i])))) {
					t.Fatalf("kernel %s m=%d n=%d k=%d ta=%v tb=%v alpha=%v beta=%v par=%v: c[%d] (row %d col %d) = %v, want %v",
						kr.name, m, n, k, ta, tb, alpha, beta, par, i, i/ldc, i%ldc, got[i], want[i])
				}
			}
		}
	}
}

func TestSgemm(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := [][3]int{
		{1, 1, 1}, {1, 1, 7}, {1, 40, 5}, {40, 1, 5}, {6, 16, 1}, {12, 32, 1}, {12, 32, 2},
		{7, 17, 3}, {11, 31, 1}, {13, 33, 2}, {13, 5, 300}, {100, 33, 257}, {64, 64, 16},
		{200, 2100, 9}, {5, 40, 600}, {48, 16, 300}, {36, 9, 20}, {24, 64, 255}, {25, 65, 513}, {97, 95, 31}, {128, 80, 77},
	}
	for _, sz := range sizes {
		m, n, k := sz[0], sz[1], sz[2]
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				for _, ab := range [][2]float32{{1, 0}, {0.5, 1}, {-2, 0.25}} {
					checkSgemm(t, rng, m, n, k, ta, tb, ab[0], ab[1])
				}
			}
		}
	}
}

// TestSgemmShapes sweeps every m, n up to a few micro-tiles (both kernels' partial tiles
// in each direction) and depths around the unrolling and kc edges.
func TestSgemmShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	ms := []int{1, 2, 4, 5, 6, 7, 8, 11, 12, 13, 16, 18, 20, 23, 24, 25, 32, 36, 37}
	ns := []int{1, 3, 15, 16, 17, 31, 32, 33, 47, 48, 63, 64, 65, 97}
	ks := []int{1, 2, 3, 8, 255, 256, 257}
	if testing.Short() {
		ks = []int{1, 3, 257}
	}
	for _, m := range ms {
		for _, n := range ns {
			for _, k := range ks {
				ta, tb := rng.IntN(2) == 0, rng.IntN(2) == 0
				alpha := float32(1)
				if rng.IntN(3) == 0 {
					alpha = 0.75
				}
				checkSgemm(t, rng, m, n, k, ta, tb, alpha, 0)
				checkSgemm(t, rng, m, n, k, !ta, !tb, 1, 1)
			}
		}
	}
}

// TestSgemmWide covers n beyond nc and k beyond kc with every kernel.
func TestSgemmWide(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	checkSgemm(t, rng, 13, nc+37, 300, false, true, 1, 0)
	checkSgemm(t, rng, 25, nc+1, 5, true, false, 1, 0.5)
}

func f64(x []float32) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

func TestDgemm(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	m, n, k := 7, 9, 11
	for _, ta := range []bool{false, true} {
		for _, tb := range []bool{false, true} {
			a, b, c := randSlice(rng, m*k), randSlice(rng, k*n), randSlice(rng, m*n)
			lda, ldb := k, n
			if ta {
				lda = m
			}
			if tb {
				ldb = k
			}
			want := append([]float32(nil), c...)
			naive(ta, tb, m, n, k, 1.5, a, lda, b, ldb, 0.5, want, n)
			got := f64(c)
			Dgemm(ta, tb, m, n, k, 1.5, f64(a), lda, f64(b), ldb, 0.5, got, n)
			for i := range got {
				if math.Abs(got[i]-float64(want[i])) > 1e-4 {
					t.Fatalf("ta=%v tb=%v: %v want %v", ta, tb, got[i], want[i])
				}
			}
		}
	}
}

func benchGemm(b *testing.B, ta, tb bool, m, n, k int, par bool) {
	rng := rand.New(rand.NewPCG(1, 2))
	x, y, z := randSlice(rng, m*k), randSlice(rng, k*n), make([]float32, m*n)
	lda, ldb := k, n
	if ta {
		lda = m
	}
	if tb {
		ldb = k
	}
	b.ReportAllocs()
	b.SetBytes(0)
	for b.Loop() {
		if par {
			Parallel(ta, tb, m, n, k, 1, x, lda, y, ldb, 0, z, n)
		} else {
			Sgemm(ta, tb, m, n, k, 1, x, lda, y, ldb, 0, z, n)
		}
	}
	b.ReportMetric(2*float64(m)*float64(n)*float64(k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// Shapes of the reference workloads: charlm's Linear layers (2048 tokens, d=64, d_ff=256)
// and attention heads (64×64×16), attn's Linear (4096×128×128) and heads (128×128×16),
// the DAE's first layer (128×784 by 784×256).
func BenchmarkLinear2048x256x64(b *testing.B)  { benchGemm(b, false, true, 2048, 256, 64, false) }
func BenchmarkLinear2048x64x256(b *testing.B)  { benchGemm(b, false, true, 2048, 64, 256, false) }
func BenchmarkGradW256x64x2048(b *testing.B)   { benchGemm(b, true, false, 256, 64, 2048, false) }
func BenchmarkLinear4096x128x128(b *testing.B) { benchGemm(b, false, true, 4096, 128, 128, false) }
func BenchmarkHead128x128x16(b *testing.B)     { benchGemm(b, false, true, 128, 128, 16, false) }
func BenchmarkHead64x64x16(b *testing.B)       { benchGemm(b, false, true, 64, 64, 16, false) }
func BenchmarkDAE128x256x784(b *testing.B)     { benchGemm(b, false, false, 128, 256, 784, false) }
func BenchmarkDAE128x256x784Par(b *testing.B)  { benchGemm(b, false, false, 128, 256, 784, true) }
func BenchmarkLinear4096x128x128Par(b *testing.B) {
	benchGemm(b, false, true, 4096, 128, 128, true)
}

func BenchmarkDAEHalfN(b *testing.B) { benchGemm(b, false, false, 128, 128, 784, false) }

// BenchmarkKernels compares the micro-kernels, one core, on the workloads' shapes:
// name mXnXk, then N (op = plain) or T (transposed) for A and B.
//
//	go test -run - -bench Kernels -benchtime 200ms ./autodiff/internal/gemm
func BenchmarkKernels(b *testing.B) {
	shapes := []struct {
		m, n, k int
		ta, tb  bool
	}{
		// DAE (batch 128, 784 → 256 → 784): forward, dX and dW of both layers.
		{128, 256, 784, false, true}, {128, 784, 256, false, true},
		{128, 256, 784, false, false}, {128, 784, 256, false, false},
		{256, 784, 128, true, false}, {784, 256, 128, true, false},
		// charlm (2048 tokens, d 64, d_ff 256).
		{2048, 64, 64, false, true}, {2048, 64, 256, false, true}, {2048, 256, 64, false, true},
		{2048, 64, 256, false, false}, {2048, 256, 64, false, false},
		{64, 64, 2048, true, false}, {256, 64, 2048, true, false}, {64, 256, 2048, true, false},
		// attention heads.
		{64, 64, 16, false, true}, {128, 128, 16, false, true},
		// attention heads' 16-column products: P·V, dQ = dS·K (a block of 32 queries),
		// dK = dSᵀ·Q and dV = Pᵀ·G.
		{32, 16, 128, false, false}, {128, 16, 32, true, false},
	}
	for _, s := range shapes {
		op := func(t bool) string {
			if t {
				return "T"
			}
			return "N"
		}
		for _, kr := range kernels() {
			if kr == goKernel {
				continue
			}
			name := fmt.Sprintf("%dx%dx%d%s%s/%s", s.m, s.n, s.k, op(s.ta), op(s.tb), kr.name)
			b.Run(name, func(b *testing.B) {
				withKernel(kr, func() { benchGemm(b, s.ta, s.tb, s.m, s.n, s.k, false) })
			})
		}
	}
}

// TestBestFollowsLevel checks that LOCUS_CPU's level picks the kernel: generic the Go
// kernel, avx2 never the AVX-512 one, and the machine's best level its best kernel.
func TestBestFollowsLevel(t *testing.T) {
	ks := kernels()
	if k := best(ks, simd.Generic); k != goKernel {
		t.Errorf("generic: kernel %s, want go", k.name)
	}
	if k := best(ks, simd.AVX2); k.level > simd.AVX2 {
		t.Errorf("avx2: kernel %s", k.name)
	}
	if k := best(ks, simd.AVX512); k != ks[0] {
		t.Errorf("avx512: kernel %s, want %s", k.name, ks[0].name)
	}
	if best(ks, simd.Current()) != active {
		t.Errorf("active kernel %s is not the best for %v", active.name, simd.Current())
	}
}

// TestPackBTransposed checks the kernels' vector packing of a transposed B (transposeB8)
// against packBPanels' Go loops, bit for bit, at depths around the blocks of eight, every
// column count up to two panels, and alpha 1 and not.
func TestPackBTransposed(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, kr := range kernels() {
		for _, k := range []*microKernel{kr, kr.narrow} {
			if k == nil || k.transposeB8 == nil {
				continue
			}
			plain := *k
			plain.transposeB8 = nil
			for _, kb := range []int{1, 7, 8, 9, 16, 63, 64, 256} {
				for nb := 1; nb <= 2*k.nr+1; nb++ {
					for _, alpha := range []float32{1, 0.3} {
						ldb, pc, jc := kb+5, 2, 3
						b := randSlice(rng, (jc+nb)*ldb)
						size := (nb + k.nr - 1) / k.nr * k.nr * kb
						got, want := randSlice(rng, size), randSlice(rng, size)
						packBPanels(k, true, b, ldb, pc, jc, kb, nb, alpha, got)
						packBPanels(&plain, true, b, ldb, pc, jc, kb, nb, alpha, want)
						for i := range want {
							if got[i] != want[i] {
								t.Fatalf("kernel %s nr=%d kb=%d nb=%d alpha=%v: packed[%d] = %v, want %v", k.name, k.nr, kb, nb, alpha, i, got[i], want[i])
							}
						}
					}
				}
			}
		}
	}
}

// TestNarrowKernelsAgree checks that the AVX-512 kernel's two narrow kernels (12×16 zmm,
// 6×16 ymm: narrowAVX512 picks one by CPU) give bit-identical products: each sums every
// element over the depth in the same order with the same FMAs.
func TestNarrowKernelsAgree(t *testing.T) {
	ks := append(kernels(), extraKernels()...)
	var wide []*microKernel
	for _, k := range ks {
		if k.narrow != nil && k.level == simd.AVX512 {
			wide = append(wide, k)
		}
	}
	if len(wide) < 2 {
		t.Skip("no AVX-512")
	}
	rng := rand.New(rand.NewPCG(11, 12))
	for _, sz := range [][3]int{{32, 16, 64}, {128, 16, 32}, {7, 13, 300}, {64, 16, 16}, {13, 1, 5}, {100, 9, 257}} {
		m, n, k := sz[0], sz[1], sz[2]
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				lda, ldb := k, n
				if ta {
					lda = m
				}
				if tb {
					ldb = k
				}
				a, b, c := randSlice(rng, m*k), randSlice(rng, k*n), randSlice(rng, m*n)
				var first []float32
				for _, kr := range wide {
					got := append([]float32(nil), c...)
					withKernel(kr, func() { Sgemm(ta, tb, m, n, k, 1, a, lda, b, ldb, 1, got, n) })
					if first == nil {
						first = got
						continue
					}
					for i := range got {
						if got[i] != first[i] {
							t.Fatalf("%dx%dx%d ta=%v tb=%v: %s gives c[%d] = %v, %s %v", m, n, k, ta, tb, kr.name, i, got[i], wide[0].name, first[i])
						}
					}
				}
			}
		}
	}
}

// TestTailsAndEdgesAgree checks that computing a product's last rows with a tail kernel
// (fewer rows) and its last columns with the narrow kernel give the same bits as the full
// kernel's overlapping tiles, scratch tiles or packed rows.
func TestTailsAndEdgesAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, kr := range append(kernels(), extraKernels()...) {
		for _, k := range []*microKernel{kr, kr.narrow} {
			if k == nil || len(k.tails) == 0 && k.narrow == nil {
				continue
			}
			plain := *k
			plain.tails, plain.narrow = nil, nil
			for _, m := range []int{1, 3, 4, 5, 8, 9, 12, 13, 16, 20, 21, 32, 64, 65} {
				for _, sz := range [][2]int{{k.nr, 37}, {k.nr + 3, 5}, {2 * k.nr, 300}, {k.nr + 16, 64}, {3*k.nr - 5, 20}, {16, 33}} {
					n, kk := sz[0], sz[1]
					for _, ta := range []bool{false, true} {
						lda := kk
						if ta {
							lda = m
						}
						a, b, c := randSlice(rng, m*kk), randSlice(rng, kk*n), randSlice(rng, m*n)
						got, want := append([]float32(nil), c...), append([]float32(nil), c...)
						withKernel(k, func() { Sgemm(ta, false, m, n, kk, 1, a, lda, b, n, 1, got, n) })
						withKernel(&plain, func() { Sgemm(ta, false, m, n, kk, 1, a, lda, b, n, 1, want, n) })
						for i := range got {
							if got[i] != want[i] {
								t.Fatalf("kernel %s %d×%d m=%d n=%d k=%d ta=%v: c[%d] = %v with tails and edges, %v without", k.name, k.mr, k.nr, m, n, kk, ta, i, got[i], want[i])
							}
						}
					}
				}
			}
		}
	}
}

// TestFlippedSameBits checks that products computed flipped (Cᵀ = B·Aᵀ, sgemmFlipped) give
// the same bits as unflipped, with every kernel, beta 0, 1 and 0.5, edges of every kind,
// and a C with a leading dimension above n; and that the shapes it covers do flip.
func TestFlippedSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	sizes := [][3]int{{64, 256, 784}, {64, 784, 256}, {128, 256, 784}, {1, 300, 40}, {7, 100, 99}, {13, 65, 300}, {20, 37, 600}, {9, 16, 200}, {33, 200, 257}}
	flipped := 0
	for _, kr := range append(kernels(), extraKernels()...) {
		for _, sz := range sizes {
			m, n, k := sz[0], sz[1], sz[2]
			for _, beta := range []float32{0, 1, 0.5} {
				if flips(kr, false, true, m, n, k, 1, beta) {
					flipped++
				}
				ldc := n + 3
				a, b, c := randSlice(rng, m*k), randSlice(rng, n*k), randSlice(rng, m*ldc)
				got, want := append([]float32(nil), c...), append([]float32(nil), c...)
				withKernel(kr, func() { Sgemm(false, true, m, n, k, 1, a, k, b, k, beta, got, ldc) })
				without(&flipNT, func() {
					withKernel(kr, func() { Sgemm(false, true, m, n, k, 1, a, k, b, k, beta, want, ldc) })
				})
				if i := firstDiff(got, want); i >= 0 {
					t.Fatalf("kernel %s m=%d n=%d k=%d beta=%v: c[%d] = %v flipped, %v not", kr.name, m, n, k, beta, i, got[i], want[i])
				}
			}
		}
	}
	if flipped == 0 && len(kernels()) > 1 {
		t.Fatal("no product flipped")
	}
}

// TestDirectBlocksSameBits checks that running A read in place in blocks of rows
// (directRows) gives the same bits as over all its rows at once, and the product's values,
// with every kernel, plain and transposed A, beta 0 and 1, blocks of 96 to 384 rows (depths
// 256, 128, 64) with rows left over that need tail kernels, and narrow last panels.
func TestDirectBlocksSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	sizes := [][3]int{{96*2 + 5, 65, 300}, {2*192 + 37, 40, 128}, {384 + 1, 33, 64}, {97, 16, 256}, {1000, 48, 257}}
	blocked := 0
	for _, kr := range append(kernels(), extraKernels()...) {
		for _, sz := range sizes {
			m, n, k := sz[0], sz[1], sz[2]
			if m/directRows(min(k, kc)) > 1 {
				blocked++
			}
			for _, ta := range []bool{false, true} {
				for _, beta := range []float32{0, 1} {
					lda := k
					if ta {
						lda = m
					}
					a, b, c := randSlice(rng, m*k), randSlice(rng, k*n), randSlice(rng, m*n)
					got, want := append([]float32(nil), c...), append([]float32(nil), c...)
					withKernel(kr, func() { Sgemm(ta, false, m, n, k, 1, a, lda, b, n, beta, got, n) })
					without(&blockDirect, func() {
						withKernel(kr, func() { Sgemm(ta, false, m, n, k, 1, a, lda, b, n, beta, want, n) })
					})
					if i := firstDiff(got, want); i >= 0 {
						t.Fatalf("kernel %s m=%d n=%d k=%d ta=%v beta=%v: c[%d] = %v in blocks, %v whole", kr.name, m, n, k, ta, beta, i, got[i], want[i])
					}
					withKernel(kr, func() { checkSgemm(t, rng, m, n, k, ta, false, 1, beta) })
				}
			}
		}
	}
	if blocked == 0 {
		t.Fatal("no product ran in more than one block")
	}
}

// TestPackedATSameBits: a transposed A packed (packAT, where packsAT chooses it) gives the
// same bits as read in place, for every kernel that can read it in place, with tails of rows
// and columns, depths past one panel, beta 0 and 1; and both are right (checkSgemm).
func TestPackedATSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	sizes := [][3]int{{384, 384, 600}, {101, 65, 300}, {7, 40, 257}, {13, 33, 64}, {200, 1000, 31}}
	ran := 0
	for _, kr := range append(kernels(), extraKernels()...) {
		if kr.directT == nil {
			continue
		}
		ran++
		for _, sz := range sizes {
			m, n, k := sz[0], sz[1], sz[2]
			for _, beta := range []float32{0, 1} {
				a, b, c := randSlice(rng, m*k), randSlice(rng, k*n), randSlice(rng, m*n)
				got, want := append([]float32(nil), c...), append([]float32(nil), c...)
				for _, run := range []struct {
					choice int
					c      []float32
				}{{transAPacked, got}, {transAInPlace, want}} {
					transAChoice = run.choice
					withKernel(kr, func() { Sgemm(true, false, m, n, k, 1, a, m, b, n, beta, run.c, n) })
					withKernel(kr, func() { checkSgemm(t, rng, m, n, k, true, false, 1, beta) })
				}
				transAChoice = transAByRule
				if i := firstDiff(got, want); i >= 0 {
					t.Fatalf("kernel %s m=%d n=%d k=%d beta=%v: c[%d] = %v with Aᵀ packed, %v in place", kr.name, m, n, k, beta, i, got[i], want[i])
				}
			}
		}
	}
	if ran == 0 {
		t.Skip("no kernel reads a transposed A in place on this CPU")
	}
}

// without runs f with the switch *on (flipNT, blockDirect) off, and turns it back on.
func without(on *bool, f func()) {
	*on = false
	defer func() { *on = true }()
	f()
}

// firstDiff returns the first index where got and want differ in bits, or −1.
func firstDiff(got, want []float32) int {
	for i := range got {
		if got[i] != want[i] {
			return i
		}
	}
	return -1
}

// TestSgemmBias checks sgemmBias and ParallelBias, under every available micro-kernel,
// against filling C with the bias and adding the product (beta = 1): the same bits, over
// shapes that take every path (the gemv rows, flipped products, tiles of the main,
// narrow and tail kernels and of the scratch tile, packed A rows, two depth panels, two
// column blocks, depth 0), with padded leading dimensions and the columns past n of C
// left as they were.
func TestSgemmBias(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	type shape struct{ m, n, k int }
	shapes := []shape{
		{1, 40, 17}, {3, 65, 64}, {4, 300, 64}, {5, 33, 9}, {7, 16, 300}, {12, 32, 256},
		{13, 48, 31}, {24, 784, 64}, {64, 256, 784}, {100, 65, 256}, {97, 17, 513},
		{36, nc + 40, 20}, {8, 10, 0},
	}
	for _, kr := range append(kernels(), extraKernels()...) {
		for _, sh := range shapes {
			for _, ta := range []bool{false, true} {
				for _, tb := range []bool{false, true} {
					m, n, k := sh.m, sh.n, sh.k
					a, lda, b, ldb, ldc := operands(rng, m, n, k, ta, tb)
					bias := randSlice(rng, n+5)
					c0 := randSlice(rng, m*ldc)
					want := append([]float32(nil), c0...)
					fillBias(m, n, bias, want, ldc)
					withKernel(kr, func() { Sgemm(ta, tb, m, n, k, 1, a, lda, b, ldb, 1, want, ldc) })
					for _, par := range []bool{false, true} {
						got := append([]float32(nil), c0...)
						withKernel(kr, func() {
							if par {
								ParallelBias(ta, tb, m, n, k, a, lda, b, ldb, bias, got, ldc)
							} else {
								sgemmBias(kr, ta, tb, m, n, k, 1, a, lda, b, ldb, 0, got, ldc, bias[:n])
							}
						})
						for i := range got {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
								t.Fatalf("kernel %s m=%d n=%d k=%d ta=%v tb=%v par=%v: c[%d] (row %d col %d) = %v, want %v (bias filled, beta 1)",
									kr.name, m, n, k, ta, tb, par, i, i/ldc, i%ldc, got[i], want[i])
							}
						}
					}
				}
			}
		}
	}
}

// TestParallelInSectionSameBits: Parallel called inside a section of internal/par (as in
// a batch part of autodiff.Model's step) runs the product whole instead of split in
// parts; the bits are the same as split, for products that split by rows and by columns,
// with A plain and transposed (packed or in place by packsAT), with and without a bias.
func TestParallelInSectionSameBits(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs GOMAXPROCS ≥ 2 for Parallel to split")
	}
	rng := rand.New(rand.NewPCG(23, 24))
	sizes := [][3]int{{1024, 256, 300}, {400, 1536, 70}, {384, 384, 600}, {2048, 40, 64}, {96, 800, 257}}
	for _, kr := range kernels() {
		for _, sz := range sizes {
			m, n, k := sz[0], sz[1], sz[2]
			for _, ta := range []bool{false, true} {
				for _, withBias := range []bool{false, true} {
					a, lda, b, ldb, ldc := operands(rng, m, n, k, ta, false)
					var bias []float32
					if withBias {
						bias = randSlice(rng, n)
					}
					split, whole := make([]float32, m*ldc), make([]float32, m*ldc)
					run := func(c []float32) {
						if bias != nil {
							ParallelBias(ta, false, m, n, k, a, lda, b, ldb, bias, c, ldc)
							return
						}
						Parallel(ta, false, m, n, k, 1, a, lda, b, ldb, 0, c, ldc)
					}
					withKernel(kr, func() {
						run(split)
						par.For(2, 1, func(lo, _ int) {
							if lo == 0 {
								run(whole)
							}
						})
					})
					if i := firstDiff(whole, split); i >= 0 {
						t.Fatalf("kernel %s m=%d n=%d k=%d ta=%v bias=%v: c[%d] = %v in a section, %v split", kr.name, m, n, k, ta, withBias, i, whole[i], split[i])
					}
				}
			}
		}
	}
}
