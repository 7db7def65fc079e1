package autodiff

import (
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

func TestRotaryGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, c := range []struct {
		shape          []int
		groups, offset int
		base           float64
	}{{[]int{1, 1, 2}, 1, 0, 0}, {[]int{2, 3, 8}, 2, 0, 0}, {[]int{1, 5, 12}, 3, 7, 100}, {[]int{2, 4, 4}, 1, 2, 10000}} {
		checkOp(t, "Rotary", map[string]*tensor.Dense{"x": randTensor(rng, 3, c.shape...)}, nil,
			func(g *Graph, p map[string]*Node) *Node { return g.Rotary(p["x"], c.groups, c.offset, c.base) }, tol)
	}
}

func TestRotaryFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	checkFloat32(t, "Rotary", map[string]*tensor.Dense{"x": randTensor(rng, 2, 3, 64, 32)}, func(g *Graph, p map[string]*Node) *Node {
		return g.Rotary(p["x"], 4, 3, 0)
	})
}

// TestRotaryValues checks Rotary against the rotation written out in float64: pairs (j,
// j + D/2) of each group turned by (offset + t)·base^(−2j/D), in both dtypes.
func TestRotaryValues(t *testing.T) {
	const b, tt, groups, d, offset, base = 2, 5, 3, 6, 4, 500.0
	rng := rand.New(rand.NewPCG(3, 4))
	x := make([]float64, b*tt*groups*d)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	want := make([]float64, len(x))
	for r := range b * tt {
		p := float64(r%tt + offset)
		for h := range groups {
			at := (r*groups + h) * d
			for j := range d / 2 {
				th := p * math.Pow(base, -2*float64(j)/d)
				x1, x2 := x[at+j], x[at+j+d/2]
				want[at+j] = x1*math.Cos(th) - x2*math.Sin(th)
				want[at+j+d/2] = x2*math.Cos(th) + x1*math.Sin(th)
			}
		}
	}
	for _, dt := range []Dtype{Float64, Float32} {
		got := evalOp(t, dt, false, map[string]*tensor.Dense{"x": denseOf([]int{b, tt, groups * d}, x...)}, nil,
			func(g *Graph, p map[string]*Node) *Node { return g.Rotary(p["x"], groups, offset, base) })
		rtol := 1e-14
		if dt == Float32 {
			rtol = 1e-6
		}
		for i := range want {
			if !(math.Abs(got[i]-want[i]) <= rtol*(1+math.Abs(want[i]))) {
				t.Fatalf("%v: element %d = %g, want %g", dt, i, got[i], want[i])
			}
		}
	}
}

func TestRotaryErrors(t *testing.T) {
	for name, f := range map[string]func(g *Graph, x *Node) *Node{
		"odd group":   func(g *Graph, x *Node) *Node { return g.Rotary(x, 4, 0, 0) },
		"rank":        func(g *Graph, x *Node) *Node { return g.Rotary(g.Reshape(x, []int{2, 12}), 1, 0, 0) },
		"offset":      func(g *Graph, x *Node) *Node { return g.Rotary(x, 1, -1, 0) },
		"base":        func(g *Graph, x *Node) *Node { return g.Rotary(x, 1, 0, math.NaN()) },
		"no groups":   func(g *Graph, x *Node) *Node { return g.Rotary(x, 0, 0, 0) },
		"indivisible": func(g *Graph, x *Node) *Node { return g.Rotary(x, 5, 0, 0) },
	} {
		err := buildErr(t, name, func(g *Graph) *Node { return f(g, g.addInput("x", Float64, tensor.Shape{2, 3, 4})) })
		wantErrContains(t, name, err, "Rotary")
	}
}
