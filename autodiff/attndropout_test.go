package autodiff

import (
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

// TestLocalMeanDropoutGradients checks the gradients of the dropped local mean in
// training (every mask case of LocalMean), with the masks replayed exactly.
func TestLocalMeanDropoutGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, c := range lmCases {
		s, v, km, _ := c.tensors(rng)
		in := map[string]*tensor.Dense{}
		if km != nil {
			in["km"] = km
		}
		for _, p := range []float64{0.25, 0.6} {
			checkOp(t, c.name, map[string]*tensor.Dense{"s": s, "v": v}, in, func(g *Graph, n map[string]*Node) *Node {
				// Two dropped means of the same scores: the masks must differ and replay.
				return g.Add(g.LocalMeanDropout(n["s"], n["v"], n["km"], c.mask, p), g.LocalMeanDropout(n["s"], n["v"], n["km"], c.mask, p))
			}, GradCheck{ATol: 1e-7, RTol: 1e-5, Train: true})
		}
	}
}

// TestLocalMeanDropoutWeights reads the dropped weights through one-hot values (v = I,
// so m_t is the weight row): each is 0 or LocalMean's weight/(1−p), about p of the
// visible ones are 0, and in evaluation the op is LocalMean.
func TestLocalMeanDropoutWeights(t *testing.T) {
	const b, h, tq, tk, p = 3, 4, 16, 16, 0.3
	rng := rand.New(rand.NewPCG(1, 2))
	s := randTensor(rng, 1, b, h, tq, tk)
	eye := make([]float64, b*h*tk*tk)
	for i := range b * h {
		for j := range tk {
			eye[(i*tk+j)*tk+j] = 1
		}
	}
	v := tensor.New(tensor.WithShape(b, h, tk, tk), tensor.WithBacking(eye))
	ps, _ := NewParams(Float64, 1)
	m := NewModel(ps, func(g *Graph) (Outputs, error) {
		si, vi := g.Input("s"), g.Input("v")
		w := g.LocalMean(si, vi, nil, Mask{Causal: true})
		d := g.LocalMeanDropout(si, vi, nil, Mask{Causal: true}, p)
		return Outputs{Values: map[string]*Node{"w": w, "d": d}}, g.Err()
	}, 7)
	in := map[string]*tensor.Dense{"s": s, "v": v}
	for _, train := range []bool{true, false} {
		res, err := m.Run(in, RunMode{Train: train})
		if err != nil {
			t.Fatal(err)
		}
		w, d := floats(res.Values["w"]), floats(res.Values["d"])
		var visible, dropped int
		for i := range w {
			if w[i] == 0 {
				if d[i] != 0 {
					t.Fatalf("train %v: weight %d is 0 (hidden), dropped weight %g", train, i, d[i])
				}
				continue
			}
			visible++
			want := w[i]
			if train {
				want /= 1 - p
			}
			switch {
			case d[i] == 0 && train:
				dropped++
			case math.Abs(d[i]-want) > 1e-12:
				t.Fatalf("train %v: weight %d = %g, want 0 or %g", train, i, d[i], want)
			}
		}
		frac := float64(dropped) / float64(visible)
		if train && math.Abs(frac-p) > 0.05 || !train && dropped != 0 {
			t.Errorf("train %v: %d of %d visible weights dropped (%.3f), want about %g", train, dropped, visible, frac, p)
		}
	}
}
