package autodiff

import (
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

// attentionRef is Attention built from the unfused ops: head split, scaled scores,
// LocalMean and head merge.
func attentionRef(g *Graph, q, k, v, keyMask *Node, heads int, scale float64, mask Mask) *Node {
	split := func(x *Node) *Node {
		s := x.Shape()
		y := g.Transpose(g.Reshape(x, []int{s[0], s[1], heads, s[2] / heads}), 0, 2, 1, 3)
		return y // [B, H, T, d]
	}
	qs, ks, vs := q.Shape(), k.Shape(), v.Shape()
	qh := g.Reshape(split(q), []int{qs[0] * heads, qs[1], qs[2] / heads})
	kh := g.Reshape(split(k), []int{ks[0] * heads, ks[1], ks[2] / heads})
	s := g.Reshape(g.Scale(g.BatchedMatMul(qh, kh, false, true), scale), []int{qs[0], heads, qs[1], ks[1]})
	m := g.LocalMean(s, split(v), keyMask, mask) // [B, H, Tq, dv]
	return g.Reshape(g.Transpose(m, 0, 2, 1, 3), []int{qs[0], qs[1], vs[2]})
}

func attnCases() []struct {
	name                     string
	b, tq, tk, heads, dk, dv int
	mask                     Mask
	keys                     bool
} {
	return []struct {
		name                     string
		b, tq, tk, heads, dk, dv int
		mask                     Mask
		keys                     bool
	}{
		{"plain", 2, 3, 4, 2, 3, 2, Mask{}, false},
		{"causal", 2, 5, 5, 2, 2, 3, Mask{Causal: true}, false},
		{"window hollow", 1, 6, 6, 3, 2, 2, Mask{Window: 2, Hollow: true}, false},
		{"offset keymask", 2, 2, 5, 2, 2, 2, Mask{Causal: true, Offset: 3}, true},
		{"long causal", 1, 70, 70, 2, 3, 2, Mask{Causal: true}, false},
	}
}

func keyMaskTensor(b, tk int) *tensor.Dense {
	km := make([]float64, b*tk)
	for i := range km {
		if i%tk != 1 && i%tk != tk-1 || i < tk {
			km[i] = 1
		}
	}
	km[tk] = 0 // batch 1 loses key 0 as well
	return tensor.New(tensor.WithShape(b, tk), tensor.WithBacking(km))
}

func TestAttentionGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 1))
	for _, c := range attnCases() {
		if c.tq > 10 {
			continue // finite differences on the small cases only
		}
		params := map[string]*tensor.Dense{
			"q": randTensor(rng, 1, c.b, c.tq, c.heads*c.dk),
			"k": randTensor(rng, 1, c.b, c.tk, c.heads*c.dk),
			"v": randTensor(rng, 1, c.b, c.tk, c.heads*c.dv),
		}
		var inputs map[string]*tensor.Dense
		if c.keys {
			inputs = map[string]*tensor.Dense{"km": keyMaskTensor(c.b, c.tk)}
		}
		checkOp(t, "Attention "+c.name, params, inputs, func(g *Graph, p map[string]*Node) *Node {
			return g.Attention(p["q"], p["k"], p["v"], p["km"], c.heads, 0.7, c.mask)
		}, GradCheck{})
	}
}

// TestAttentionMatchesLocalMean checks values and gradients against the unfused ops in
// float64 and the float32 fast path against float64.
func TestAttentionMatchesLocalMean(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 1))
	for _, c := range attnCases() {
		params := map[string]*tensor.Dense{
			"q": randTensor(rng, 1, c.b, c.tq, c.heads*c.dk),
			"k": randTensor(rng, 1, c.b, c.tk, c.heads*c.dk),
			"v": randTensor(rng, 1, c.b, c.tk, c.heads*c.dv),
		}
		var km *tensor.Dense
		if c.keys {
			km = keyMaskTensor(c.b, c.tk)
		}
		withMask := func(f func(g *Graph, q, k, v, km *Node) *Node) func(g *Graph, p map[string]*Node) *Node {
			return func(g *Graph, p map[string]*Node) *Node {
				var kn *Node
				if km != nil {
					kn = g.ConstTensor(km.Shape(), km.Data().([]float64))
				}
				return f(g, p["q"], p["k"], p["v"], kn)
			}
		}
		fused := withMask(func(g *Graph, q, k, v, km *Node) *Node { return g.Attention(q, k, v, km, c.heads, 0.6, c.mask) })
		ref := withMask(func(g *Graph, q, k, v, km *Node) *Node { return attentionRef(g, q, k, v, km, c.heads, 0.6, c.mask) })
		lf, gf := runGrads(t, Float64, params, fused)
		lr, gr := runGrads(t, Float64, params, ref)
		if !(math.Abs(lf-lr) <= 1e-10*(1+math.Abs(lr))) {
			t.Errorf("%s: loss %v, unfused %v", c.name, lf, lr)
		}
		for n, want := range gr {
			for i, v := range gf[n] {
				if !(math.Abs(v-want[i]) <= 1e-10*(1+math.Abs(want[i]))) {
					t.Errorf("%s: gradient of %s[%d] = %v, unfused %v", c.name, n, i, v, want[i])
					break
				}
			}
		}
		checkFloat32(t, "Attention "+c.name, params, fused)
	}
}

func TestAttentionErrors(t *testing.T) {
	in := func(g *Graph, name string, shape ...int) *Node { return g.addInput(name, Float64, tensor.Shape(shape)) }
	for _, tc := range []struct {
		name string
		f    func(g *Graph) *Node
		want []string
	}{
		{"heads", func(g *Graph) *Node {
			return g.Attention(in(g, "q", 2, 3, 4), in(g, "k", 2, 3, 4), in(g, "v", 2, 3, 4), nil, 3, 1, Mask{})
		}, []string{"Attention", "3 heads"}},
		{"widths", func(g *Graph) *Node {
			return g.Attention(in(g, "q", 2, 3, 4), in(g, "k", 2, 3, 6), in(g, "v", 2, 3, 4), nil, 2, 1, Mask{})
		}, []string{"Attention", "(2, 3, 6)"}},
		{"keymask", func(g *Graph) *Node {
			return g.Attention(in(g, "q", 2, 3, 4), in(g, "k", 2, 3, 4), in(g, "v", 2, 3, 4), in(g, "m", 2, 4), 2, 1, Mask{})
		}, []string{"Attention", "key mask"}},
	} {
		err := buildErr(t, tc.name, tc.f)
		wantErrContains(t, tc.name, err, tc.want...)
	}
}
