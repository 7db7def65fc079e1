//go:build !amd64 || purego

package gradsum

const hasAVX2 = false

func addScaled2AVX2(dst, a, b *float32, n int, ca, cb float32) {
	panic("gradsum: no AVX2 loop on this platform")
}
