//go:build amd64 && !purego

package gemm

import "golang.org/x/sys/cpu"

var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// hasDirect reports whether kernelDirect (A read in place) is available.
var hasDirect = useAVX2

//go:noescape
func kernel6x16u(k int, a *float32, lda int, b, c *float32, ldc int)

// kernelDirect is kernel with A's mr rows read in place at stride lda.
func kernelDirect(k int, a []float32, lda int, b, c []float32, ldc int) {
	_ = a[(mr-1)*lda+k-1]
	_ = b[k*nr-1]
	_ = c[(mr-1)*ldc+nr-1]
	kernel6x16u(k, &a[0], lda, &b[0], &c[0], ldc)
}

//go:noescape
func kernel6x16(k int, a, b, c *float32, ldc int)

// kernel adds the product of an mr-row A panel and an nr-column B panel over depth k
// into c (leading dimension ldc).
func kernel(k int, a, b, c []float32, ldc int) {
	if !useAVX2 || k == 0 {
		kernelGo(k, a, b, c, ldc)
		return
	}
	_ = a[k*mr-1]
	_ = b[k*nr-1]
	_ = c[(mr-1)*ldc+nr-1]
	kernel6x16(k, &a[0], &b[0], &c[0], ldc)
}
