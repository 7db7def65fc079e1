package autodiff

import (
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

// TestSumEngineSameBits runs float32 graphs whose nodes are used several times, so that
// gorgonia's Backprop sums their gradient contributions with its Add (in place and
// into a reuse tensor), with sumEngine and with gorgonia's engine: every gradient and
// output must have the same bits. It also checks that the vector path was taken.
func TestSumEngineSameBits(t *testing.T) {
	run := func(sum bool, shards int) map[string][]float32 {
		saved := useSumEngine
		useSumEngine = sum
		defer func() { useSumEngine = saved }()
		ps, err := NewParams(Float32, 5)
		if err != nil {
			t.Fatal(err)
		}
		w, err := ps.Root().New("w", []int{37, 37}, Normal(0, 0.3))
		if err != nil {
			t.Fatal(err)
		}
		b, err := ps.Root().New("b", []int{37}, Normal(0, 0.3))
		if err != nil {
			t.Fatal(err)
		}
		mod := NewModel(ps, func(g *Graph) (Outputs, error) {
			x := g.Input("x")
			h := g.Tanh(g.MatMul(x, g.Param(w)))
			h2 := g.MatMul(h, g.Param(w))
			z := g.Add(g.Mul(h, h2), g.AddBias(h, g.Param(b)))
			z = g.Add(z, g.Sigmoid(g.AddBias(h2, g.Param(b))))
			return Outputs{Loss: g.Sum(g.Mul(z, z)), Values: map[string]*Node{"z": z},
				Batch: &Batch{Examples: x.Shape()[0], LossSum: true}}, g.Err()
		}, 1)
		if err := mod.SetShards(shards); err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(6, 7))
		x := make([]float32, 12*37)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		res, err := mod.Run(map[string]*tensor.Dense{"x": tensor.New(tensor.WithShape(12, 37), tensor.WithBacking(x))}, RunMode{Backward: true, InputGrads: true})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]float32{"loss": {float32(res.Loss)}, "z": res.Values["z"].Float32s(), "dx": res.InputGrads["x"].Float32s()}
		for _, p := range ps.List() {
			out[p.Name()] = p.GradFloat32s()
		}
		for k, v := range out {
			out[k] = append([]float32(nil), v...)
		}
		return out
	}
	for _, shards := range []int{1, 2} {
		calls := sumEngineCalls.Load()
		got, want := run(true, shards), run(false, shards)
		if sumEngineCalls.Load() == calls {
			t.Fatalf("shards %d: the graph ran no float32 Add on sumEngine's vector path", shards)
		}
		for name, w := range want {
			for i := range w {
				if math.Float32bits(got[name][i]) != math.Float32bits(w[i]) {
					t.Fatalf("shards %d: %s[%d] is %v with sumEngine, %v with gorgonia's engine", shards, name, i, got[name][i], w[i])
				}
			}
		}
	}
}
