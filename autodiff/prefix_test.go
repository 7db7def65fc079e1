package autodiff

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

// TestCausalLinearAttentionGradients finite-difference-checks the fused causal prefix
// sums (float64), with and without a decoding offset.
func TestCausalLinearAttentionGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, c := range []struct{ tq, tk, off int }{{4, 4, 0}, {2, 5, 3}, {3, 5, 1}} {
		p := map[string]*tensor.Dense{
			"a": randTensor(rng, 1, 2, c.tq, 3),
			"b": randTensor(rng, 1, 2, c.tk, 3),
			"v": randTensor(rng, 1, 2, c.tk, 2),
		}
		checkOp(t, fmt.Sprintf("CausalLinearAttention%+v", c), p, nil, func(g *Graph, p map[string]*Node) *Node {
			return g.CausalLinearAttention(p["a"], p["b"], p["v"], c.off)
		}, GradCheck{ATol: 1e-7, RTol: 1e-5})
	}
}

// TestCausalLinearAttentionValues compares the op with the masked product
// [(A Bᵀ) ⊙ tril] V it replaces.
func TestCausalLinearAttentionValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	const n, tq, tk, m, d, off = 2, 3, 5, 4, 3, 2
	a, b, v := randTensor(rng, 1, n, tq, m), randTensor(rng, 1, n, tk, m), randTensor(rng, 1, n, tk, d)
	ps, _ := NewParams(Float64, 0)
	mod := NewModel(ps, func(g *Graph) (Outputs, error) {
		return Outputs{Values: map[string]*Node{"y": g.CausalLinearAttention(g.Input("a"), g.Input("b"), g.Input("v"), off)}}, g.Err()
	}, 0)
	res, err := mod.Forward(map[string]*tensor.Dense{"a": a, "b": b, "v": v})
	if err != nil {
		t.Fatal(err)
	}
	got := res.Values["y"].Float64s()
	A, B, V := a.Float64s(), b.Float64s(), v.Float64s()
	for i := range n {
		for q := range tq {
			for c := range d {
				var want float64
				for s := 0; s < tk && s <= q+off; s++ {
					var w float64
					for p := range m {
						w += A[(i*tq+q)*m+p] * B[(i*tk+s)*m+p]
					}
					want += w * V[(i*tk+s)*d+c]
				}
				if x := got[(i*tq+q)*d+c]; !(math.Abs(x-want) <= 1e-12) {
					t.Fatalf("out[%d,%d,%d] = %g, want %g", i, q, c, x, want)
				}
			}
		}
	}
}
