package autodiff

import (
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

func TestLinearGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 1))
	for _, xs := range [][]int{{5, 3}, {2, 4, 3}, {1, 3}} {
		for _, bias := range []bool{false, true} {
			params := map[string]*tensor.Dense{"x": randTensor(rng, 1, xs...), "w": randTensor(rng, 1, 4, 3)}
			if bias {
				params["b"] = randTensor(rng, 1, 4)
			}
			checkOp(t, "Linear", params, nil, func(g *Graph, p map[string]*Node) *Node {
				return g.Linear(p["x"], p["w"], p["b"])
			}, GradCheck{})
		}
	}
}

func TestLinearErrors(t *testing.T) {
	g := NewGraph(Float64, false, 1)
	x := g.addInput("x", Float64, tensor.Shape{2, 3})
	w := g.addInput("w", Float64, tensor.Shape{4, 2})
	if g.Linear(x, w, nil) != nil || g.Err() == nil {
		t.Fatal("Linear accepted a weight of the wrong width")
	}
	g = NewGraph(Float64, false, 1)
	x = g.addInput("x", Float64, tensor.Shape{2, 3})
	w = g.addInput("w", Float64, tensor.Shape{4, 3})
	b := g.addInput("b", Float64, tensor.Shape{3})
	if g.Linear(x, w, b) != nil || g.Err() == nil {
		t.Fatal("Linear accepted a bias of the wrong width")
	}
}

// runGrads runs f's projected loss in dtype dt on the given parameter values and returns
// the loss and every gradient as float64.
func runGrads(t *testing.T, dt Dtype, params map[string]*tensor.Dense, f func(g *Graph, p map[string]*Node) *Node) (float64, map[string][]float64) {
	t.Helper()
	return runGradsWith(t, dt, params, nil, f)
}

// runGradsWith is runGrads with inputs (float64 tensors, cast to dt).
func runGradsWith(t *testing.T, dt Dtype, params, inputs map[string]*tensor.Dense, f func(g *Graph, p map[string]*Node) *Node) (float64, map[string][]float64) {
	t.Helper()
	var names []string
	in := map[string]*tensor.Dense{}
	for n, v := range inputs {
		names = append(names, n)
		in[n] = castTo(v, dt)
	}
	m, byName := newTestModel(t, dt, params, names, f, 5)
	ps := m.Params()
	var res *Result
	var first map[string][]float64
	for run := range 2 { // the second run checks that reused buffers give the same answer
		ps.ZeroGrad()
		var err error
		if res, err = m.Run(in, RunMode{Backward: true}); err != nil {
			t.Fatal(err)
		}
		grads := map[string][]float64{}
		for n, p := range byName {
			v := make([]float64, p.Size())
			for i := range v {
				v[i] = p.GradAt(i)
			}
			grads[n] = v
		}
		if run == 0 {
			first = grads
			continue
		}
		for n, v := range grads {
			for i, x := range v {
				if y := first[n][i]; x != y && !(math.IsNaN(x) && math.IsNaN(y)) {
					t.Fatalf("%v: gradient of %s[%d] is %g on a second run, %g on the first: a buffer kept a stale value", dt, n, i, x, y)
				}
			}
		}
	}
	return res.Loss, first
}

// checkFloat32 compares f's float32 loss and gradients (the fast kernels) with float64.
func checkFloat32(t *testing.T, name string, params map[string]*tensor.Dense, f func(g *Graph, p map[string]*Node) *Node) {
	t.Helper()
	l64, g64 := runGrads(t, Float64, params, f)
	l32, g32 := runGrads(t, Float32, params, f)
	// written as !(d ≤ tol), so that NaN (poisonUnread's, say) fails
	if !(math.Abs(l32-l64) <= 1e-4*(1+math.Abs(l64))) {
		t.Errorf("%s: float32 loss %v, float64 %v", name, l32, l64)
	}
	for n, want := range g64 {
		var scale float64
		for _, v := range want {
			scale = max(scale, math.Abs(v))
		}
		for i, v := range g32[n] {
			if !(math.Abs(v-want[i]) <= 1e-4*(1+scale)) {
				t.Errorf("%s: float32 gradient of %s[%d] = %v, float64 %v", name, n, i, v, want[i])
				break
			}
		}
	}
}

func TestMatMulFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, 1))
	r := func(s ...int) *tensor.Dense { return randTensor(rng, 1, s...) }
	// Sizes that exercise edge tiles, several k panels and the parallel split.
	for _, mkn := range [][3]int{{7, 5, 3}, {70, 300, 33}, {300, 40, 70}} {
		m, k, n := mkn[0], mkn[1], mkn[2]
		checkFloat32(t, "MatMul", map[string]*tensor.Dense{"a": r(m, k), "b": r(k, n)}, func(g *Graph, p map[string]*Node) *Node {
			return g.MatMul(p["a"], p["b"])
		})
		checkFloat32(t, "Linear", map[string]*tensor.Dense{"x": r(2, m, k), "w": r(n, k), "b": r(n)}, func(g *Graph, p map[string]*Node) *Node {
			return g.Linear(p["x"], p["w"], p["b"])
		})
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				as, bs := []int{3, m, k}, []int{3, k, n}
				if ta {
					as = []int{3, k, m}
				}
				if tb {
					bs = []int{3, n, k}
				}
				checkFloat32(t, "BatchedMatMul", map[string]*tensor.Dense{"a": r(as...), "b": r(bs...)}, func(g *Graph, p map[string]*Node) *Node {
					return g.BatchedMatMul(p["a"], p["b"], ta, tb)
				})
			}
		}
	}
}
