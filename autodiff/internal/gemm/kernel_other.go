//go:build !amd64 || purego

package gemm

func kernel(k int, a, b, c []float32, ldc int) { kernelGo(k, a, b, c, ldc) }

const hasDirect = false

func kernelDirect(k int, a []float32, lda int, b, c []float32, ldc int) {
	panic("gemm: kernelDirect without AVX2")
}
