// Package kern holds the optimizers' vectorised float32 kernels: assembly for amd64
// with AVX-512 or AVX2, chosen at run time (golang.org/x/sys/cpu). Without them (other
// CPUs, other architectures, -tags purego) Adam32 does nothing and the caller's scalar
// loop does all the work, and SumSquares32 runs plain Go in the same order.
//
// The kernels compute exactly what the scalar Go code in package optim computes, bit
// for bit: every step is one IEEE float32 operation in the same order, with separate
// multiplies and adds (no fused multiply-add) and correctly rounded square roots and
// divisions.
package kern

// AdamCoefs are the float32 coefficients of one Adam update (see Adam32).
type AdamCoefs struct {
	B1, B2  float32 // β1, β2
	C1, C2  float32 // 1−β1, 1−β2
	NegStep float32 // −lr/(1−β1ᵗ)
	Bc2     float32 // √(1−β2ᵗ)
	Eps     float32
	// Factor is the L2 weight decay with Mode AdamL2 and the decoupled shrink
	// 1 − lr·wd with Mode AdamShrink; it is unused with AdamPlain.
	Factor float32
	Mode   int
}

// Adam32 modes.
const (
	// AdamPlain: d = g.
	AdamPlain = iota
	// AdamL2: d = g + Factor·p (Adam's weight decay).
	AdamL2
	// AdamShrink: p = p·Factor before the update (AdamW's decoupled weight decay).
	AdamShrink
)

// Adam32 applies the Adam update (without AMSGrad) to a leading part of p, g, m and v
// (all of the same length) and returns its length, a multiple of the vector width; 0
// when no vector kernel is available. Element i becomes
//
//	p = p·Factor                       (AdamShrink)
//	d = g, or g + Factor·p             (AdamL2)
//	m = m·B1 + C1·d,       then 0 where |m| < 2⁻¹²⁶ (a subnormal; NaN kept)
//	v = v·B2 + (C2·d)·d,   then 0 where |v| < 2⁻¹²⁶
//	p = p + (NegStep·m) / (√v/Bc2 + Eps)
//
// each operation rounded to float32. The caller updates the rest.
func Adam32(p, g, m, v []float32, k *AdamCoefs) int {
	n := len(p)
	if len(g) < n || len(m) < n || len(v) < n {
		panic("kern: Adam32: slices of different lengths")
	}
	switch {
	case hasAVX512:
		n &^= 15
		if n > 0 {
			adamAVX512(&p[0], &g[0], &m[0], &v[0], n, k)
		}
	case hasAVX2:
		n &^= 7
		if n > 0 {
			adamAVX2(&p[0], &g[0], &m[0], &v[0], n, k)
		}
	default:
		return 0
	}
	return n
}

// SumSquares32 returns Σ x² accumulated in float64 in a fixed order that does not depend
// on the CPU: sixteen partial sums, partial j over the elements i ≡ j (mod 16) of the
// leading multiple of 16, combined pairwise, then the remaining elements added in order.
func SumSquares32(x []float32) float64 {
	n := len(x) &^ 15
	var s [16]float64
	if n > 0 {
		switch {
		case hasAVX512:
			sumSqAVX512(&x[0], n, &s)
		case hasAVX2:
			sumSqAVX2(&x[0], n, &s)
		default:
			sumSqGo(x[:n], &s)
		}
	}
	// Pairwise: lanes j and j+8, then j and j+4, j+2, j+1.
	for w := 8; w >= 1; w /= 2 {
		for j := range w {
			s[j] = s[j] + s[j+w]
		}
	}
	r := s[0]
	for _, e := range x[n:] {
		f := float64(e)
		r = r + float64(f*f)
	}
	return r
}

// sumSqGo adds x[i]² to s[i%16]; len(x) is a multiple of 16.
func sumSqGo(x []float32, s *[16]float64) {
	for ; len(x) >= 16; x = x[16:] {
		for j := range 16 {
			f := float64(x[j])
			s[j] = s[j] + float64(f*f)
		}
	}
}
