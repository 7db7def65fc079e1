//go:build amd64 && !purego

package gemm

import "golang.org/x/sys/cpu"

// extraKernels are kernel configurations this CPU can run that kernels() does not list:
// the AVX-512 kernel with the narrow kernel it does not choose here (narrowAVX512), so
// that the tests cover both on every AVX-512 machine.
func extraKernels() []*microKernel {
	if !cpu.X86.HasAVX512F {
		return nil
	}
	k := *avx512Kernel
	k.name = "avx512-other-narrow"
	if k.narrow == avx512Narrow {
		k.narrow = avx2Kernel
	} else {
		k.narrow = avx512Narrow
	}
	return []*microKernel{&k}
}
