package gemm

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"
	"unsafe"
)

// threadCPU returns the CPU time of the calling thread in seconds
// (CLOCK_THREAD_CPUTIME_ID): unlike wall time, it hardly moves with the other processes
// of a shared machine.
func threadCPU() float64 {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0)
	return float64(ts.Nano()) / 1e9
}

// BenchmarkBInPlace compares reading a plain B's full panels in place with packing them,
// on one thread, by thread CPU time (metric cpu-µs/op), for every assembly kernel:
//
//	go test -run - -bench BInPlace -count 5 ./autodiff/internal/gemm
//
// Shapes mXnXk then N (op(A) = A) or T (Aᵀ): the DAE's input and weight gradients,
// charlm's Linear gradients (m = 2048 packs B either way: maxRowsBInPlace) and
// attention heads' P·V, dQ and dK products.
func BenchmarkBInPlace(b *testing.B) {
	shapes := []struct {
		m, n, k int
		ta      bool
	}{
		{128, 256, 784, false}, {128, 784, 256, false}, {256, 784, 128, true}, {784, 256, 128, true},
		{64, 64, 2048, true}, {256, 64, 2048, true}, {64, 256, 2048, true}, {2048, 256, 64, false},
		{32, 16, 128, false}, {32, 16, 64, false}, {128, 16, 32, true},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, kr := range kernels() {
		if kr == goKernel {
			continue
		}
		for _, s := range shapes {
			x, y, z := randSlice(rng, s.m*s.k), randSlice(rng, s.k*s.n), make([]float32, s.m*s.n)
			lda, op := s.k, "N"
			if s.ta {
				lda, op = s.m, "T"
			}
			for _, inPlace := range []bool{false, true} {
				name := fmt.Sprintf("%s/%dx%dx%d%s/inPlace=%v", kr.name, s.m, s.n, s.k, op, inPlace)
				b.Run(name, func(b *testing.B) {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					old := bInPlace
					bInPlace = inPlace
					defer func() { bInPlace = old }()
					withKernel(kr, func() {
						t0 := threadCPU()
						for b.Loop() {
							Sgemm(s.ta, false, s.m, s.n, s.k, 1, x, lda, y, s.n, 0, z, s.n)
						}
						b.ReportMetric((threadCPU()-t0)/float64(b.N)*1e6, "cpu-µs/op")
					})
				})
			}
		}
	}
}

// BenchmarkFlipCold compares the flipped product (Cᵀ = B·Aᵀ, sgemmFlipped) with packing
// the transposed B, for the Linear forwards that flip, with B (the weight) cold: a 32 MiB
// sweep before each call evicts it, then A and C (the activations, just written in a
// step) are read back into cache. Thread CPU µs of the product alone (cpu-µs/op):
//
//	go test -run - -bench FlipCold -count 3 ./autodiff/internal/gemm
func BenchmarkFlipCold(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	sweep := make([]float32, 8<<20)
	var sink float32
	touch := func(v []float32) {
		for i := 0; i < len(v); i += 16 {
			sink += v[i]
		}
	}
	for _, s := range [][3]int{{64, 256, 784}, {64, 784, 256}, {128, 256, 784}} {
		m, n, k := s[0], s[1], s[2]
		x, w, c := randSlice(rng, m*k), randSlice(rng, n*k), randSlice(rng, m*n)
		for _, kr := range kernels() {
			if kr.direct == nil {
				continue
			}
			for _, flip := range []bool{false, true} {
				b.Run(fmt.Sprintf("%dx%dx%dNT/%s/flip=%v", m, n, k, kr.name, flip), func(b *testing.B) {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					old := flipNT
					flipNT = flip
					defer func() { flipNT = old }()
					var cpu float64
					withKernel(kr, func() {
						for b.Loop() {
							for i := range sweep {
								sweep[i]++
							}
							touch(x)
							touch(c)
							t0 := threadCPU()
							Sgemm(false, true, m, n, k, 1, x, k, w, k, 1, c, n)
							cpu += threadCPU() - t0
						}
					})
					b.ReportMetric(cpu/float64(b.N)*1e6, "cpu-µs/op")
				})
			}
		}
	}
	_ = sink
}
