package autodiff

import (
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

func TestKernelOpsGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	q := randTensor(rng, 1, 2, 3, 4)
	k := randTensor(rng, 1, 2, 5, 4)
	s := randTensor(rng, 1, 2, 3)
	x := randTensor(rng, 1, 2, 3, 4)
	for _, c := range []struct {
		name   string
		params map[string]*tensor.Dense
		f      func(g *Graph, p map[string]*Node) *Node
	}{
		{"ScaleRows", map[string]*tensor.Dense{"x": x, "s": s}, func(g *Graph, p map[string]*Node) *Node {
			return g.ScaleRows(p["x"], p["s"])
		}},
		{"LogSumExp", map[string]*tensor.Dense{"x": x}, func(g *Graph, p map[string]*Node) *Node {
			return g.LogSumExp(p["x"])
		}},
		{"SqDist", map[string]*tensor.Dense{"q": q, "k": k}, func(g *Graph, p map[string]*Node) *Node {
			return g.PairwiseDist(p["q"], p["k"], true)
		}},
		{"Dist", map[string]*tensor.Dense{"q": q, "k": k}, func(g *Graph, p map[string]*Node) *Node {
			return g.PairwiseDist(p["q"], p["k"], false)
		}},
		{"LogPositive", map[string]*tensor.Dense{"x": x}, func(g *Graph, p map[string]*Node) *Node {
			// Only the inside of the support reaches the loss; outside entries are −Inf
			// with zero gradient, so mask them out through LocalMean.
			return g.LocalMean(g.LogPositive(p["x"]), g.ConstTensor([]int{2, 4, 1}, []float64{1, 2, 3, 4, 5, 6, 7, 8}), nil, Mask{})
		}},
		{"KthSmallest", map[string]*tensor.Dense{"q": q, "k": k}, func(g *Graph, p map[string]*Node) *Node {
			return g.KthSmallest(g.PairwiseDist(p["q"], p["k"], false), nil, 2, Mask{Causal: true, Offset: 1})
		}},
	} {
		checkOp(t, c.name, c.params, nil, c.f, GradCheck{ATol: 1e-7, RTol: 1e-5})
	}
}

func TestPairwiseDistValues(t *testing.T) {
	ps, _ := NewParams(Float64, 0)
	m := NewModel(ps, func(g *Graph) (Outputs, error) {
		q, k := g.Input("q"), g.Input("k")
		d := g.PairwiseDist(q, k, false)
		return Outputs{Values: map[string]*Node{
			"d":   d,
			"knn": g.KthSmallest(d, nil, 1, Mask{Hollow: true}),
			"lse": g.LogSumExp(g.LogPositive(g.Input("x"))),
		}}, g.Err()
	}, 0)
	res, err := m.Forward(map[string]*tensor.Dense{
		"q": tensor.New(tensor.WithShape(1, 2, 2), tensor.WithBacking([]float64{0, 0, 1, 1})),
		"k": tensor.New(tensor.WithShape(1, 2, 2), tensor.WithBacking([]float64{3, 4, 1, 1})),
		"x": tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{-1, 0, 1, 3})),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{5, math.Sqrt(2), math.Sqrt(13), 0}
	for i, w := range want {
		if got := res.Values["d"].Data().([]float64)[i]; math.Abs(got-w) > 1e-12 {
			t.Errorf("d[%d] = %g, want %g", i, got, w)
		}
	}
	// Hollow: query 0 skips key 0 (distance 5) and sees key 1; query 1 skips key 1.
	if got := res.Values["knn"].Data().([]float64); got[0] != math.Sqrt(2) || got[1] != math.Sqrt(13) {
		t.Errorf("knn = %v", got)
	}
	lse := res.Values["lse"].Data().([]float64)
	if !math.IsInf(lse[0], -1) || math.Abs(lse[1]-math.Log(4)) > 1e-12 {
		t.Errorf("lse = %v, want [-Inf log 4]", lse)
	}
}

func TestKernelOpsShapeErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func(g *Graph) *Node
	}{
		{"ScaleRows", func(g *Graph) *Node {
			return g.ScaleRows(g.ConstTensor([]int{2, 3}, make([]float64, 6)), g.ConstTensor([]int{3}, make([]float64, 3)))
		}},
		{"PairwiseDist", func(g *Graph) *Node {
			return g.PairwiseDist(g.ConstTensor([]int{1, 2, 3}, make([]float64, 6)), g.ConstTensor([]int{1, 2, 2}, make([]float64, 4)), true)
		}},
		{"KthSmallest", func(g *Graph) *Node {
			return g.KthSmallest(g.ConstTensor([]int{1, 2, 2}, make([]float64, 4)), nil, 0, Mask{})
		}},
		{"LogSumExp", func(g *Graph) *Node { return g.LogSumExp(g.ConstTensor([]int{3}, make([]float64, 3))) }},
	} {
		g := NewGraph(Float64, false, 0)
		if out := c.f(g); out != nil || g.Err() == nil || !contains(g.Err().Error(), c.name) {
			t.Errorf("%s: got %v, err %v", c.name, out, g.Err())
		}
	}
}
