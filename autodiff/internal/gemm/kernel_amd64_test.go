//go:build amd64 && !purego

package gemm

import (
	"testing"

	"golang.org/x/sys/cpu"
)

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

// TestCopyRowsAVX checks the assembly panel copy for both panel widths it serves (the AVX2
// kernel's 16 columns, the AVX-512 kernel's 32: it needs only AVX, so both run on any
// AVX2 machine) and a width it leaves to Go, against copy, without writing past the panel.
func TestCopyRowsAVX(t *testing.T) {
	if !cpu.X86.HasAVX2 {
		t.Skip("no AVX2")
	}
	for _, nr := range []int{16, 32, 8} {
		for _, rows := range []int{1, 2, 7, 256} {
			ldb := nr + 13
			b := make([]float32, (rows-1)*ldb+nr)
			for i := range b {
				b[i] = float32(i) + 0.5
			}
			dst := make([]float32, rows*nr+5)
			for i := range dst {
				dst[i] = -1
			}
			copyRowsAVX(rows, b, ldb, dst[:rows*nr], nr)
			for p := range rows {
				for j := range nr {
					if got, want := dst[p*nr+j], b[p*ldb+j]; got != want {
						t.Fatalf("nr=%d rows=%d: dst[%d] = %v, want b[%d] = %v", nr, rows, p*nr+j, got, p*ldb+j, want)
					}
				}
			}
			for i := rows * nr; i < len(dst); i++ {
				if dst[i] != -1 {
					t.Fatalf("nr=%d rows=%d: wrote dst[%d] past the panel", nr, rows, i)
				}
			}
		}
	}
}
