package autodiff

import (
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

// randTensor returns a float64 tensor of N(0, scale²) values.
func randTensor(rng *rand.Rand, scale float64, shape ...int) *tensor.Dense {
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = scale * rng.NormFloat64()
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(v))
}

// projectLoss returns Σ out ⊙ R for a fixed random R, so that every output element's
// gradient is distinct (a plain sum would hide errors that cancel).
func projectLoss(g *Graph, out *Node, seed uint64) *Node {
	if out == nil {
		return nil
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	shape := out.Shape()
	n := 1
	for _, d := range shape {
		n *= d
	}
	r := make([]float64, n)
	for i := range r {
		r[i] = rng.NormFloat64()
	}
	if len(shape) == 0 {
		return g.Scale(out, r[0])
	}
	return g.Sum(g.Mul(out, g.ConstTensor(shape, r)))
}

// checkOp gradient-checks f with every tensor in params turned into a float64 parameter.
func checkOp(t *testing.T, name string, params map[string]*tensor.Dense, inputs map[string]*tensor.Dense,
	f func(g *Graph, p map[string]*Node) *Node, opt GradCheck) {
	t.Helper()
	names := make([]string, 0, len(inputs))
	for n := range inputs {
		names = append(names, n)
	}
	m, _ := newTestModel(t, Float64, params, names, f, 5)
	worst, err := CheckGradients(m, inputs, opt)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if worst.CheckedValues == 0 {
		t.Fatalf("%s: no gradient was checked", name)
	}
}
