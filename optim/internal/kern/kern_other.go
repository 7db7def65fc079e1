//go:build !amd64 || purego

package kern

const (
	hasAVX512 = false
	hasAVX2   = false
)

func adamAVX512(p, gr, m, v *float32, n int, k *AdamCoefs) { panic("kern: no AVX-512") }
func adamAVX2(p, gr, m, v *float32, n int, k *AdamCoefs)   { panic("kern: no AVX2") }
func sumSqAVX512(x *float32, n int, s *[16]float64)        { panic("kern: no AVX-512") }
func sumSqAVX2(x *float32, n int, s *[16]float64)          { panic("kern: no AVX2") }
