package autodiff

import (
	"fmt"
	"math"

	"gorgonia.org/tensor"
)

// Rotary applies the rotary position embedding to x [B, T, Groups·D] (D even), each group
// of D columns (a head's queries or keys) at position offset + t rotated as RoFormer
// does: for j < D/2, with θ = (offset + t)·base^(−2j/D),
//
//	y_j = x_j·cos θ − x_{j+D/2}·sin θ,  y_{j+D/2} = x_{j+D/2}·cos θ + x_j·sin θ,
//
// that is x·cos + rotate_half(x)·sin with rotate_half(x) = [−x₂, x₁]. Its gradient is the
// inverse rotation. base 0 means 10000. One fused op in place of the slices, negation,
// concatenation and products of the composed form, which computes the same numbers.
func (g *Graph) Rotary(x *Node, groups, offset int, base float64) *Node {
	if !g.ok("Rotary", x) {
		return nil
	}
	s := x.Shape()
	switch {
	case len(s) != 3:
		return g.failf("Rotary: input %v, want [B, T, Groups·D]", s)
	case groups < 1 || s[2]%groups != 0 || (s[2]/groups)%2 != 0:
		return g.failf("Rotary: %d columns in %d groups, want groups of an even width", s[2], groups)
	case offset < 0:
		return g.failf("Rotary: offset %d, want >= 0", offset)
	case !(base >= 0) || math.IsInf(base, 0):
		return g.failf("Rotary: base %g, want a finite value >= 0 (0: 10000)", base)
	}
	return g.applyFused(&rotaryKernel{groups: groups, offset: offset, base: base}, x)
}

// rotaryKernel is Rotary's op; cos and sin ([T, D/2], float64, and their float32
// roundings) are formed on the first pass at a length and kept.
type rotaryKernel struct {
	groups, offset int
	base           float64
	t, d           int
	cos, sin       []float64
	cos32, sin32   []float32
}

func (k *rotaryKernel) opName() string { return "Rotary" }
func (k *rotaryKernel) hashAttrs() string {
	return fmt.Sprintf("{%d,%d,%g}", k.groups, k.offset, k.base)
}
func (k *rotaryKernel) arity() int                                       { return 1 }
func (k *rotaryKernel) diffWRT() []bool                                  { return []bool{true} }
func (k *rotaryKernel) floatInputs() []bool                              { return []bool{true} }
func (k *rotaryKernel) outShape(in []tensor.Shape) (tensor.Shape, error) { return in[0].Clone(), nil }

// RotaryFactors returns cos θ and sin θ, [t, d/2] row-major, of the rotary embedding at
// positions offset..offset+t−1 for groups of width d: θ = (offset + p)·base^(−2j/d), base 0
// meaning 10000. Rotary and layers' rotary tables both take their angles from here.
func RotaryFactors(t, d, offset int, base float64) (cos, sin []float64) {
	if base == 0 {
		base = 10000
	}
	half := d / 2
	cos, sin = make([]float64, t*half), make([]float64, t*half)
	for p := range t {
		for j := range half {
			angle := float64(p+offset) * math.Pow(base, -2*float64(j)/float64(d))
			cos[p*half+j], sin[p*half+j] = math.Cos(angle), math.Sin(angle)
		}
	}
	return cos, sin
}

// tables forms the factors for t positions of width d, and their float32 roundings.
func (k *rotaryKernel) tables(t, d int) {
	if k.t == t && k.d == d {
		return
	}
	k.t, k.d = t, d
	k.cos, k.sin = RotaryFactors(t, d, k.offset, k.base)
	k.cos32, k.sin32 = make([]float32, len(k.cos)), make([]float32, len(k.sin))
	for i := range k.cos {
		k.cos32[i], k.sin32[i] = float32(k.cos[i]), float32(k.sin[i])
	}
}

func (k *rotaryKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	s := in[0].Shape()
	k.tables(s[1], s[2]/k.groups)
	if isF32(in[0]) {
		rotateRows(flat[float32](in[0]), flat[float32](out), k.cos32, k.sin32, s[0]*s[1], s[1], k.groups, k.d, 1)
	} else {
		rotateRows(flat[float64](in[0]), flat[float64](out), k.cos, k.sin, s[0]*s[1], s[1], k.groups, k.d, 1)
	}
	return nil
}

// gradReads: the gradient is the upstream gradient rotated back.
func (k *rotaryKernel) gradReads(int) []bool { return reads(1) }

func (k *rotaryKernel) backward(_ int, in []*tensor.Dense, _, gout, dst *tensor.Dense) error {
	s := in[0].Shape()
	k.tables(s[1], s[2]/k.groups)
	if isF32(in[0]) {
		rotateRows(flat[float32](gout), flat[float32](dst), k.cos32, k.sin32, s[0]*s[1], s[1], k.groups, k.d, -1)
	} else {
		rotateRows(flat[float64](gout), flat[float64](dst), k.cos, k.sin, s[0]*s[1], s[1], k.groups, k.d, -1)
	}
	return nil
}

// rotateRows sets y = rotation of x by θ (dir 1) or by −θ (dir −1, the gradient) for rows
// rows of groups groups of d columns; row r is at position r mod t.
func rotateRows[T float](x, y, cos, sin []T, rows, t, groups, d int, dir T) {
	half := d / 2
	parallelFor(rows, groups*d, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			cs, sn := cos[(r%t)*half:][:half], sin[(r%t)*half:][:half]
			for h := range groups {
				at := (r*groups + h) * d
				x1, x2 := x[at:at+half], x[at+half:at+d]
				y1, y2 := y[at:at+half], y[at+half:at+d]
				for j, c := range cs {
					sj := dir * sn[j]
					a, b := x1[j], x2[j]
					y1[j] = a*c + (-b)*sj
					y2[j] = b*c + a*sj
				}
			}
		}
	})
}
