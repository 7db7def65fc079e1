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

// TestCopyATAVX checks the assembly copy of a transposed A's whole panels (packAT) for
// both panel heights (the AVX2 kernel's 6 rows, the AVX-512 kernel's 12: it needs only
// AVX, so both run on any AVX2 machine) against the panels' definition, at strides that
// are not multiples of a vector and at depths of one row to past a panel, without writing
// past the panels.
func TestCopyATAVX(t *testing.T) {
	if !cpu.X86.HasAVX2 {
		t.Skip("no AVX2")
	}
	for _, mr := range []int{6, 12} {
		copyAT := copyATAVX(mr)
		for _, panels := range []int{1, 2, 3, 8} {
			for _, kb := range []int{1, 2, 17, 256} {
				lda := panels*mr + 5
				a := make([]float32, (kb-1)*lda+panels*mr)
				for i := range a {
					a[i] = float32(i) + 0.25
				}
				dst := make([]float32, panels*kb*mr+7)
				for i := range dst {
					dst[i] = -1
				}
				copyAT(kb, a, lda, dst[:panels*kb*mr], panels)
				for r := range panels {
					for p := range kb {
						for i := range mr {
							if got, want := dst[r*kb*mr+p*mr+i], a[p*lda+r*mr+i]; got != want {
								t.Fatalf("mr=%d panels=%d kb=%d: panel %d step %d value %d = %v, want %v", mr, panels, kb, r, p, i, got, want)
							}
						}
					}
				}
				for i := panels * kb * mr; i < len(dst); i++ {
					if dst[i] != -1 {
						t.Fatalf("mr=%d panels=%d kb=%d: wrote dst[%d] past the panels", mr, panels, kb, i)
					}
				}
			}
		}
	}
}
