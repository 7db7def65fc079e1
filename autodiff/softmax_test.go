package autodiff

import (
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

func TestSoftmaxGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	causal := func(rows, cols int) *tensor.Dense {
		m := make([]float64, rows*cols)
		for r := 0; r < rows; r++ {
			for c := 0; c < cols; c++ {
				if c <= r%cols {
					m[r*cols+c] = 1
				}
			}
		}
		return tensor.New(tensor.WithShape(rows, cols), tensor.WithBacking(m))
	}
	fullyMasked := causal(4, 5)
	fm := fullyMasked.Data().([]float64)
	for c := 0; c < 5; c++ {
		fm[2*5+c] = 0 // row 2 has no visible entry
	}
	for _, log := range []bool{false, true} {
		for _, tc := range []struct {
			name  string
			shape []int
			scale float64
			mask  *tensor.Dense
		}{
			{"plain", []int{3, 7}, 1, nil},
			{"size1rows", []int{4, 1}, 1, nil},
			{"size1", []int{1, 1}, 1, nil},
			{"3d", []int{2, 3, 4}, 2, nil},
			{"large", []int{3, 5}, 1e4, nil},
			{"causal", []int{4, 5}, 1, causal(4, 5)},
			{"fullyMasked", []int{4, 5}, 1, fullyMasked},
		} {
			x := randTensor(rng, tc.scale, tc.shape...)
			in := map[string]*tensor.Dense{}
			if tc.mask != nil {
				in["mask"] = tc.mask
			}
			checkOp(t, tc.name, map[string]*tensor.Dense{"x": x}, in, func(g *Graph, p map[string]*Node) *Node {
				if log {
					return g.LogSoftmax(p["x"], p["mask"])
				}
				return g.Softmax(p["x"], p["mask"])
			}, GradCheck{ATol: 1e-7, RTol: 1e-5})
		}
	}
}

func TestSoftmaxValues(t *testing.T) {
	for _, dt := range []Dtype{Float32, Float64} {
		g := NewGraph(dt, false, 0)
		_ = g
		ps, _ := NewParams(dt, 0)
		p, _ := ps.Root().New("x", []int{3, 3}, Zeros())
		_ = p.SetFloat64s([]float64{1e4, 1e4 + 1, -1e4, 0, 0, 0, -5, 3, 1})
		mask := []float64{1, 1, 1, 0, 0, 0, 1, 0, 1}
		m := NewModel(ps, func(g *Graph) (Outputs, error) {
			mk := g.Input("mask")
			return Outputs{Values: map[string]*Node{
				"p":  g.Softmax(g.Param(p), mk),
				"lp": g.LogSoftmax(g.Param(p), mk),
			}}, g.Err()
		}, 0)
		mt := tensor.New(tensor.WithShape(3, 3), tensor.Of(dt))
		for i, v := range mask {
			if dt == Float32 {
				mt.Data().([]float32)[i] = float32(v)
			} else {
				mt.Data().([]float64)[i] = v
			}
		}
		res, err := m.Forward(map[string]*tensor.Dense{"mask": mt})
		if err != nil {
			t.Fatal(err)
		}
		e := math.Exp(1.0)
		want := []float64{1 / (1 + e), e / (1 + e), 0, 0, 0, 0, math.Exp(-5) / (math.Exp(-5) + e), 0, e / (math.Exp(-5) + e)}
		lse0 := 1e4 + 1 + math.Log1p(math.Exp(-1))
		lse2 := 1 + math.Log1p(math.Exp(-6))
		wantLog := []float64{1e4 - lse0, 1e4 + 1 - lse0, -1e4 - lse0, 0, 0, 0, -5 - lse2, 0, 1 - lse2}
		for i, w := range want {
			got := at(res.Values["p"], i)
			if math.IsNaN(got) || math.Abs(got-w) > 1e-6 {
				t.Errorf("%v: softmax[%d] = %g, want %g", dt, i, got, w)
			}
			lg := at(res.Values["lp"], i)
			wl := wantLog[i]
			if math.IsNaN(lg) || math.Abs(lg-wl) > 1e-4*math.Max(1, math.Abs(wl)) {
				t.Errorf("%v: logsoftmax[%d] = %g, want %g", dt, i, lg, wl)
			}
		}
	}
}

func at(t *tensor.Dense, i int) float64 {
	switch d := t.Data().(type) {
	case []float32:
		return float64(d[i])
	case []float64:
		return d[i]
	}
	return math.NaN()
}
