package vmath

// Transpose sets dst[c·ldd + s] = a·src[s·lds + c] for s < rows and c < cols: a block
// of rows×cols values at row stride lds, transposed and scaled into dst at row stride
// ldd (attention's per-head Kᵀ and Vᵀ). The AVX2 path transposes 8×8 tiles in
// registers; the products are the scalar loop's, bit for bit.
func Transpose(dst []float32, ldd int, src []float32, lds, rows, cols int, a float32) {
	if rows <= 0 || cols <= 0 {
		return
	}
	_ = src[(rows-1)*lds+cols-1]
	_ = dst[(cols-1)*ldd+rows-1]
	r8, c8 := 0, 0
	if hasAVX2 && rows >= 8 && cols >= 8 {
		r8, c8 = rows&^7, cols&^7
		transposeAVX2(&dst[0], ldd, &src[0], lds, r8, c8, a)
	}
	for s := range rows {
		c0 := 0
		if s < r8 {
			c0 = c8
		}
		for c := c0; c < cols; c++ {
			dst[c*ldd+s] = a * src[s*lds+c]
		}
	}
}
