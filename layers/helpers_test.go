package layers

import (
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff"
)

// randDense returns a float64 tensor of N(0, scale²) values.
func randDense(rng *rand.Rand, scale float64, shape ...int) *tensor.Dense {
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

// projectLoss returns Σ out ⊙ R for a fixed random R, so that every output element has
// a distinct gradient.
func projectLoss(g *autodiff.Graph, out *autodiff.Node) *autodiff.Node {
	if out == nil {
		return nil
	}
	rng := rand.New(rand.NewPCG(99, 7))
	shape := out.Shape()
	n := 1
	for _, d := range shape {
		n *= d
	}
	r := make([]float64, n)
	for i := range r {
		r[i] = rng.NormFloat64()
	}
	return g.Sum(g.Mul(out, g.ConstTensor(shape, r)))
}

// forwardFunc builds a layer's output from the graph's inputs.
type forwardFunc func(g *autodiff.Graph) *autodiff.Node

// checkLayer creates a layer with make under a fresh float64 registry, jitters every
// parameter (so that zero-initialised ones are exercised too), and gradient-checks the
// loss Σ out ⊙ R with respect to every parameter and float input.
func checkLayer(t *testing.T, name string, make func(s autodiff.Scope) (forwardFunc, error), inputs map[string]*tensor.Dense, opt autodiff.GradCheck) {
	t.Helper()
	ps, err := autodiff.NewParams(autodiff.Float64, 1)
	if err != nil {
		t.Fatal(err)
	}
	f, err := make(ps.Root())
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	for _, p := range ps.List() {
		for i := range p.Size() {
			p.SetAt(i, p.At(i)+0.1*rng.NormFloat64())
		}
	}
	m := autodiff.NewModel(ps, func(g *autodiff.Graph) (autodiff.Outputs, error) {
		return autodiff.Outputs{Loss: projectLoss(g, f(g))}, g.Err()
	}, 5)
	if opt.ATol == 0 {
		opt.ATol = 1e-7
	}
	if opt.MaxPerTensor == 0 {
		opt.MaxPerTensor = 4
	}
	opt.Inputs = true
	worst, err := autodiff.CheckGradients(m, inputs, opt)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if worst.CheckedValues == 0 {
		t.Fatalf("%s: no gradient was checked", name)
	}
}
