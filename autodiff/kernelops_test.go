package autodiff

import (
	"fmt"
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

// TestPairwiseDistFloat32 checks the float32 kernels (AVX-512 where the CPU has it, and
// the plain loops) against the float64 ones, at sizes around the 16-lane width, with
// coinciding points (distance exactly 0, zero subgradient) and zero upstream gradients.
func TestPairwiseDistFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	paths := []bool{false}
	if hasAVX512 {
		paths = append(paths, true)
	}
	defer func(h bool) { hasAVX512 = h }(hasAVX512)
	for _, avx := range paths {
		hasAVX512 = avx
		for _, sz := range [][4]int{{1, 1, 1, 1}, {2, 3, 5, 4}, {2, 16, 16, 16}, {1, 17, 33, 17}, {3, 9, 40, 33}, {1, 20, 15, 8}} {
			n, tq, tk, d := sz[0], sz[1], sz[2], sz[3]
			q64, k64 := make([]float64, n*tq*d), make([]float64, n*tk*d)
			g64 := make([]float64, n*tq*tk)
			for i := range q64 {
				q64[i] = rng.NormFloat64()
			}
			for i := range k64 {
				k64[i] = rng.NormFloat64()
			}
			for i := range g64 {
				if rng.IntN(3) > 0 {
					g64[i] = rng.NormFloat64()
				}
			}
			// Query t of problem p coincides with key t.
			for p := 0; p < n; p++ {
				for t := 0; t < min(tq, tk); t += 2 {
					copy(q64[(p*tq+t)*d:(p*tq+t+1)*d], k64[(p*tk+t)*d:(p*tk+t+1)*d])
				}
			}
			f32 := func(x []float64) []float32 {
				y := make([]float32, len(x))
				for i, v := range x {
					y[i] = float32(v)
				}
				return y
			}
			// The float64 reference starts from the float32-rounded inputs.
			q32, k32, g32 := f32(q64), f32(k64), f32(g64)
			for i := range q64 {
				q64[i] = float64(q32[i])
			}
			for i := range k64 {
				k64[i] = float64(k32[i])
			}
			for i := range g64 {
				g64[i] = float64(g32[i])
			}
			for _, squared := range []bool{true, false} {
				name := fmt.Sprintf("avx512=%v %v squared=%v", avx, sz, squared)
				o64, o32 := make([]float64, n*tq*tk), make([]float32, n*tq*tk)
				pairDistFwd(q64, k64, o64, n, tq, tk, d, squared)
				pairDistFwd(q32, k32, o32, n, tq, tk, d, squared)
				for i, w := range o64 {
					if w == 0 && o32[i] != 0 || math.Abs(float64(o32[i])-w) > 1e-5*max(1, w) {
						t.Fatalf("%s: dist[%d] = %g, want %g", name, i, o32[i], w)
					}
				}
				for wrt, size := range []int{n * tq * d, n * tk * d} {
					d64, d32 := make([]float64, size), make([]float32, size)
					for i := range d32 {
						d32[i] = float32(math.NaN()) // every entry must be written
					}
					pairDistBwd(wrt, q64, k64, o64, g64, d64, n, tq, tk, d, squared)
					pairDistBwd(wrt, q32, k32, o32, g32, d32, n, tq, tk, d, squared)
					scale := 0.0
					for _, w := range d64 {
						scale = max(scale, math.Abs(w))
					}
					for i, w := range d64 {
						if math.IsNaN(float64(d32[i])) || math.Abs(float64(d32[i])-w) > 1e-5*max(1, scale) {
							t.Fatalf("%s: grad %d [%d] = %g, want %g", name, wrt, i, d32[i], w)
						}
					}
				}
			}
		}
	}
}
