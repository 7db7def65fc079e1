package gemm

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"syscall"
	"testing"

	"github.com/locusml/locus/internal/simd"
)

// The products of the reference workloads (../shared/peers/WORKLOADS.md) as their ops call
// gemm: a Linear layer x[rows, in]·Wᵀ → y[rows, out] runs forward as NT (rows×out×in),
// its input gradient as NN (rows×in×out) and its weight gradient as TN (out×in×rows).
// Rows are the whole batch's (charlm 32×64 tokens, attn 32×128, dae 128 images); a run
// split into two batch parts (autodiff.Model's shards) does each product at half the rows
// (the -part shapes). Attention's per-head products are those of one block of 32 query rows
// (autodiff's rowBlock): head width 16, scores scaled by 1/√16; charlm causal with up to 64
// keys, attn 128 keys.
type workloadShape struct {
	name    string
	m, n, k int
	ta, tb  bool
	alpha   float32
	beta    float32
}

// operands returns the shape's leading dimensions of A and B as stored, random A, B and C, and
// the product's FLOPs.
func (s workloadShape) operands(rng *rand.Rand) (lda, ldb int, a, b, c []float32, flops float64) {
	lda, ldb = s.k, s.n
	if s.ta {
		lda = s.m
	}
	if s.tb {
		ldb = s.k
	}
	a, b, c = randSlice(rng, s.m*s.k), randSlice(rng, s.k*s.n), randSlice(rng, s.m*s.n)
	return lda, ldb, a, b, c, 2 * float64(s.m) * float64(s.n) * float64(s.k)
}

func linearShapes(prefix string, rows, in, out int) []workloadShape {
	return []workloadShape{
		{prefix + "-fwd", rows, out, in, false, true, 1, 1}, // y = bias + x·Wᵀ
		{prefix + "-dX", rows, in, out, false, false, 1, 0},
		{prefix + "-dW", out, in, rows, true, false, 1, 0},
	}
}

func workloadShapes() []workloadShape {
	var s []workloadShape
	for _, rows := range []int{2048, 1024} {
		p := "charlm"
		if rows == 1024 {
			p += "-part"
		}
		s = append(s, linearShapes(p+"/d64-d64", rows, 64, 64)...)
		s = append(s, linearShapes(p+"/d64-ff256", rows, 64, 256)...)
		s = append(s, linearShapes(p+"/ff256-d64", rows, 256, 64)...)
		s = append(s, linearShapes(p+"/head64-65", rows, 64, 65)...)
	}
	s = append(s,
		workloadShape{"charlm/head-QKt", 32, 64, 16, false, true, 0.25, 0}, // scaled scores
		workloadShape{"charlm/head-PV", 32, 16, 64, false, false, 1, 0},
		workloadShape{"charlm/head-dP", 32, 64, 16, false, true, 1, 0}, // G·Vᵀ
		workloadShape{"charlm/head-dK", 64, 16, 32, true, false, 1, 1},
	)
	for _, rows := range []int{4096, 2048} {
		p := "attn"
		if rows == 2048 {
			p += "-part"
		}
		s = append(s, linearShapes(p+"/d128-d128", rows, 128, 128)...)
	}
	s = append(s,
		workloadShape{"attn/head-QKt", 32, 128, 16, false, true, 0.25, 0},
		workloadShape{"attn/head-PV", 32, 16, 128, false, false, 1, 0},
		workloadShape{"attn/head-dP", 32, 128, 16, false, true, 1, 0},
		workloadShape{"attn/head-dQ", 32, 16, 128, false, false, 1, 0},
		workloadShape{"attn/head-dK", 128, 16, 32, true, false, 1, 1},
	)
	for _, rows := range []int{128, 64} {
		p := "dae"
		if rows == 64 {
			p += "-part"
		}
		s = append(s, linearShapes(p+"/784-256", rows, 784, 256)...)
		s = append(s, linearShapes(p+"/256-64", rows, 256, 64)...)
		s = append(s, linearShapes(p+"/64-256", rows, 64, 256)...)
		s = append(s, linearShapes(p+"/256-784", rows, 256, 784)...)
	}
	return s
}

var (
	peakOnce sync.Once
	peaks    map[string]float64 // GFLOP/s of one core, by register width
)

// measurePeaks times each FMA peak loop on this thread by thread CPU time (the best of 5
// runs of about 20 ms), once per process.
func measurePeaks() map[string]float64 {
	peakOnce.Do(func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		peaks = map[string]float64{}
		for w, l := range peakLoops() {
			const n = 4_000_000
			best := 0.0
			for range 5 {
				t0 := threadCPU()
				l.fn(n)
				if g := float64(n) * float64(l.flops) / (threadCPU() - t0) / 1e9; g > best {
					best = g
				}
			}
			peaks[w] = best
		}
	})
	return peaks
}

// kernelPeak is the peak that kernel kr's fraction is of: the zmm loop's for the AVX-512
// kernel, the ymm loop's for the others (the Go kernel included: it is the machine's FMA
// peak, which plain Go does not reach); 0 where there is no peak loop (other CPUs, purego).
func kernelPeak(kr *microKernel) float64 {
	p := measurePeaks()
	if kr.level == simd.AVX512 {
		return p["zmm"]
	}
	return p["ymm"]
}

// BenchmarkPeakFMA measures one core's float32 FMA throughput with 12 independent chains
// of zmm and of ymm FMAs (the roof BenchmarkShapes reports fractions of):
//
//	go test -run - -bench PeakFMA ./autodiff/internal/gemm
func BenchmarkPeakFMA(b *testing.B) {
	for _, w := range []string{"zmm", "ymm"} {
		l, ok := peakLoops()[w]
		if !ok {
			continue
		}
		b.Run(w, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			const n = 100_000
			t0 := threadCPU()
			for b.Loop() {
				l.fn(n)
			}
			cpu := threadCPU() - t0
			b.ReportMetric(float64(b.N)*n*float64(l.flops)/cpu/1e9, "GFLOP/s")
		})
	}
}

// processCPU returns the CPU time of the whole process (all threads) in seconds.
func processCPU() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// BenchmarkShapes runs every workload product (workloadShapes) with every kernel the CPU
// has (avx512, avx2, go: the LOCUS_CPU code paths), on one thread (Sgemm, t1) and split by
// Parallel over GOMAXPROCS threads (tN), and reports:
//
//   - GFLOP/s: by wall time;
//   - peak: the fraction of the FMA peak (BenchmarkPeakFMA, measured in the same process)
//     reached, by the calling thread's CPU time for t1 (immune to other processes) and by
//     wall time against N cores' peak for tN;
//   - cpu-peak (tN only): FLOPs per second of the process's CPU time (all threads, the
//     pool's spinning included) against one core's peak.
//
// Operands are reused from one call to the next, so they are in cache (L2 mostly) as a
// workload's freshly written activations are; the peak is per core (on this machine zmm
// and ymm reach the same).
//
//	go test -run - -bench Shapes -benchtime 100ms ./autodiff/internal/gemm
//	go test -run - -bench 'Shapes/charlm/.*/avx512/t1' ./autodiff/internal/gemm
func BenchmarkShapes(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	op := func(t bool) string {
		if t {
			return "T"
		}
		return "N"
	}
	threads := runtime.GOMAXPROCS(0)
	for _, s := range workloadShapes() {
		lda, ldb, x, y, z, flops := s.operands(rng)
		ks := kernels()
		if s.n <= 16 {
			ks = append(ks, extraKernels()...) // the other narrow kernel
		}
		for _, kr := range ks {
			peak := kernelPeak(kr)
			for _, par := range []bool{false, true} {
				t := "t1"
				if par {
					t = fmt.Sprintf("t%d", threads)
				}
				name := fmt.Sprintf("%s/%dx%dx%d%s%s/%s/%s", s.name, s.m, s.n, s.k, op(s.ta), op(s.tb), kr.name, t)
				b.Run(name, func(b *testing.B) {
					if !par {
						runtime.LockOSThread()
						defer runtime.UnlockOSThread()
					}
					withKernel(kr, func() {
						t0, p0 := threadCPU(), processCPU()
						for b.Loop() {
							if par {
								Parallel(s.ta, s.tb, s.m, s.n, s.k, s.alpha, x, lda, y, ldb, s.beta, z, s.n)
							} else {
								Sgemm(s.ta, s.tb, s.m, s.n, s.k, s.alpha, x, lda, y, ldb, s.beta, z, s.n)
							}
						}
						tcpu, pcpu := threadCPU()-t0, processCPU()-p0
						total := flops * float64(b.N)
						b.ReportMetric(total/b.Elapsed().Seconds()/1e9, "GFLOP/s")
						if peak == 0 {
							return
						}
						if !par {
							b.ReportMetric(total/tcpu/1e9/peak, "peak")
							return
						}
						b.ReportMetric(total/b.Elapsed().Seconds()/1e9/(peak*float64(threads)), "peak")
						b.ReportMetric(total/pcpu/1e9/peak, "cpu-peak")
					})
				})
			}
		}
	}
}

// BenchmarkPackBTransposed packs a transposed B (a Linear layer's weights in its forward
// product; keys in attention's scores) into every kernel's panels (the Go loops for the Go
// kernel, 8×8 vector transposes for the others), in ns per value:
//
//	go test -run - -bench PackBTransposed ./autodiff/internal/gemm
func BenchmarkPackBTransposed(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, s := range [][2]int{{256, 784}, {64, 64}, {16, 64}} {
		kb, nb := s[0], s[1]
		src := randSlice(rng, nb*kb)
		dst := make([]float32, (nb+maxNR)*kb)
		for _, kr := range kernels() {
			b.Run(fmt.Sprintf("k%d-n%d/%s", kb, nb, kr.name), func(b *testing.B) {
				for b.Loop() {
					packBPanels(kr, true, src, kb, 0, 0, kb, nb, 1, dst)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(kb*nb), "ns/value")
			})
		}
	}
}

// BenchmarkDirectBlocks times the products of the baby GPT's layers (d 384, d_ff 1536; a
// shard of 2048 rows) and of the mid size (d 256, d_ff 1024) with A read in place in blocks
// of directRows rows and over all of A at once, one core, in fractions of its FMA peak:
//
//	go test -run - -bench DirectBlocks -count 5 ./autodiff/internal/gemm
func BenchmarkDirectBlocks(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	var ss []workloadShape
	ss = append(ss, linearShapes("baby/d384-ff1536", 2048, 384, 1536)...)
	ss = append(ss, linearShapes("baby/ff1536-d384", 2048, 1536, 384)...)
	ss = append(ss, linearShapes("baby/d384-d384", 2048, 384, 384)...)
	ss = append(ss, linearShapes("mid/d256-ff1024", 2048, 256, 1024)...)
	for _, s := range ss {
		lda, ldb, x, y, z, flops := s.operands(rng)
		peak := kernelPeak(active)
		variants := []string{"blocks", "whole"}
		if s.ta {
			variants = append(variants, "packed")
		}
		for _, v := range variants {
			b.Run(fmt.Sprintf("%s/%dx%dx%d/%s", s.name, s.m, s.n, s.k, v), func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				blockDirect, transAChoice = v != "whole", transAInPlace
				if v == "packed" {
					transAChoice = transAPacked
				}
				defer func() { blockDirect, transAChoice = true, transAByRule }()
				t0 := threadCPU()
				for b.Loop() {
					Sgemm(s.ta, s.tb, s.m, s.n, s.k, s.alpha, x, lda, y, ldb, s.beta, z, s.n)
				}
				total := flops * float64(b.N)
				b.ReportMetric(total/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				if peak > 0 {
					b.ReportMetric(total/(threadCPU()-t0)/1e9/peak, "peak")
				}
			})
		}
	}
}
