package autodiff

import (
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

// TestLocalMeanWeightsAreTheOps checks that the tapped weights of LocalMean and Attention
// are a softmax over the visible keys (an independent loop), that they reproduce the op's
// output as Σ_s w_ts v_s, and that visibility follows the mask and the key mask.
func TestLocalMeanWeightsAreTheOps(t *testing.T) {
	const b, h, tq, tk, d = 2, 2, 5, 5, 3
	rng := rand.New(rand.NewPCG(1, 2))
	randT := func(shape ...int) *tensor.Dense {
		n := 1
		for _, s := range shape {
			n *= s
		}
		x := make([]float64, n)
		for i := range x {
			x[i] = rng.NormFloat64()
		}
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(x))
	}
	keyMask := tensor.New(tensor.WithShape(b, tk), tensor.WithBacking([]float64{1, 1, 1, 1, 0, 1, 0, 1, 1, 1}))
	mask := Mask{Causal: true, Window: 3, Hollow: false}
	for _, fused := range []bool{false, true} {
		ps, _ := NewParams(Float64, 0)
		inputs := map[string]*tensor.Dense{"km": keyMask}
		if fused {
			inputs["q"], inputs["k"], inputs["v"] = randT(b, tq, h*d), randT(b, tk, h*d), randT(b, tk, h*d)
		} else {
			inputs["s"], inputs["v"] = randT(b, h, tq, tk), randT(b, h, tk, d)
		}
		build := func(g *Graph) (Outputs, error) {
			var m *Node
			if fused {
				m = g.Attention(g.Input("q"), g.Input("k"), g.Input("v"), g.Input("km"), h, 0.5, mask)
			} else {
				m = g.LocalMean(g.Input("s"), g.Input("v"), g.Input("km"), mask)
			}
			w, vis := g.LocalMeanWeights(m)
			g.Tap("w", w)
			g.Tap("vis", vis)
			return Outputs{Values: map[string]*Node{"m": m}}, g.Err()
		}
		res, err := NewModel(ps, build, 0).Run(inputs, RunMode{Taps: true})
		if err != nil {
			t.Fatal(err)
		}
		w, vis, m := res.Taps["w"].Float64s(), res.Taps["vis"].Float64s(), res.Values["m"].Float64s()
		if got := res.Taps["w"].Shape(); !got.Eq(tensor.Shape{b, h, tq, tk}) {
			t.Fatalf("fused=%v: weights shape %v", fused, got)
		}
		for bi := range b {
			for j := range h {
				for q := range tq {
					row := ((bi*h+j)*tq + q) * tk
					// scores of this row
					sc := make([]float64, tk)
					for s := range tk {
						if fused {
							var dot float64
							for c := range d {
								dot += inputs["q"].Float64s()[(bi*tq+q)*h*d+j*d+c] * inputs["k"].Float64s()[(bi*tk+s)*h*d+j*d+c]
							}
							sc[s] = 0.5 * dot
						} else {
							sc[s] = inputs["s"].Float64s()[row+s]
						}
					}
					var z float64
					want := make([]float64, tk)
					for s := range tk {
						ok := mask.Visible(q, s, tk) && keyMask.Float64s()[bi*tk+s] != 0
						if (vis[row+s] == 1) != ok {
							t.Fatalf("fused=%v: visible[%d,%d,%d,%d] = %g, want %v", fused, bi, j, q, s, vis[row+s], ok)
						}
						if ok {
							want[s] = math.Exp(sc[s])
							z += want[s]
						}
					}
					for s := range tk {
						if z > 0 {
							want[s] /= z
						}
						if math.Abs(w[row+s]-want[s]) > 1e-12 {
							t.Fatalf("fused=%v: w[%d,%d,%d,%d] = %g, want %g", fused, bi, j, q, s, w[row+s], want[s])
						}
					}
					for c := range d {
						var sum float64
						for s := range tk {
							if fused {
								sum += w[row+s] * inputs["v"].Float64s()[(bi*tk+s)*h*d+j*d+c]
							} else {
								sum += w[row+s] * inputs["v"].Float64s()[((bi*h+j)*tk+s)*d+c]
							}
						}
						got := m[((bi*h+j)*tq+q)*d+c]
						if fused {
							got = m[(bi*tq+q)*h*d+j*d+c]
						}
						if math.Abs(sum-got) > 1e-12 {
							t.Fatalf("fused=%v: Σ w v = %g, op output %g", fused, sum, got)
						}
					}
				}
			}
		}
	}
}

func TestTapsOnlyWhenTapping(t *testing.T) {
	ps, _ := NewParams(Float64, 0)
	build := func(g *Graph) (Outputs, error) {
		x := g.Input("x")
		g.Tap("x2", g.Scale(x, 2))
		g.Tap("x2", g.Scale(x, 3))
		return Outputs{Values: map[string]*Node{"x": x}}, g.Err()
	}
	m := NewModel(ps, build, 0)
	in := map[string]*tensor.Dense{"x": tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{1, 2}))}
	res, err := m.Forward(in)
	if err != nil || res.Taps != nil {
		t.Fatalf("Forward: taps %v, err %v; want none", res.Taps, err)
	}
	res, err = m.Run(in, RunMode{Taps: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Taps["x2#2"].Float64s()[1]; got != 6 || len(res.Taps) != 2 {
		t.Fatalf("taps %v", res.Taps)
	}
}

func TestLocalMeanWeightsOfOtherOp(t *testing.T) {
	g := NewGraph(Float64, false, 0)
	x := g.Const(1)
	if w, _ := g.LocalMeanWeights(g.Scale(x, 2)); w != nil || g.Err() == nil {
		t.Fatal("LocalMeanWeights of a Scale: want an error")
	}
}
