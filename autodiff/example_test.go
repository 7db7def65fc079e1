package autodiff_test

import (
	"fmt"
	"math"

	"github.com/locusml/locus/autodiff"
	"gorgonia.org/tensor"
)

// Parameters take hierarchical names from the scopes they are created in; the names
// are the keys of checkpoints.
func ExampleNewParams() {
	ps, err := autodiff.NewParams(autodiff.Float32, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	block := ps.Scope("blocks").Sub("0")
	if _, err := block.Sub("attn").Sub("q").New("weight", []int{8, 8}, autodiff.XavierUniform(8, 8)); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := block.Sub("ln1").New("weight", []int{8}, autodiff.Ones()); err != nil {
		fmt.Println(err)
		return
	}
	for _, name := range ps.SortedNames() {
		fmt.Println(name, ps.Get(name).Shape())
	}
	fmt.Println(ps.NumElements(), "values of", ps.Dtype())
	// Output:
	// blocks.0.attn.q.weight [8 8]
	// blocks.0.ln1.weight [8]
	// 72 values of float32
}

// A linear map y = x·W with a mean squared loss: one forward and backward pass, and the
// gradient it adds into the parameter.
func ExampleModel_ForwardBackward() {
	ps, _ := autodiff.NewParams(autodiff.Float64, 1)
	w, _ := ps.Scope("fc").New("weight", []int{2, 1}, autodiff.Constant(0.5))
	build := func(g *autodiff.Graph) (autodiff.Outputs, error) {
		pred := g.MatMul(g.Input("x"), g.Param(w))
		loss := g.Mean(g.Square(g.Sub(pred, g.Input("y"))))
		return autodiff.Outputs{Loss: loss, Values: map[string]*autodiff.Node{"pred": pred}}, g.Err()
	}
	m := autodiff.NewModel(ps, build, 0)
	res, err := m.ForwardBackward(map[string]*tensor.Dense{
		"x": tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{1, 2, 3, 4})),
		"y": tensor.New(tensor.WithShape(2, 1), tensor.WithBacking([]float64{1, 1})),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("parameter:", w.Name())
	fmt.Println("pred:", res.Values["pred"].Data())
	fmt.Printf("loss: %.4f\n", res.Loss)
	fmt.Println("dloss/dW:", w.GradFloat64s())
	// Output:
	// parameter: fc.weight
	// pred: [1.5 3.5]
	// loss: 3.2500
	// dloss/dW: [8 11]
}

// A shape mismatch is an error that names the op and the shapes, not a panic.
func ExampleGraph_Err() {
	ps, _ := autodiff.NewParams(autodiff.Float64, 1)
	w, _ := ps.Scope("fc").New("weight", []int{3, 1}, autodiff.Zeros())
	build := func(g *autodiff.Graph) (autodiff.Outputs, error) {
		out := g.MatMul(g.Input("x"), g.Param(w)) // x is [2, 2]: does not fit [3, 1]
		return autodiff.Outputs{Values: map[string]*autodiff.Node{"out": out}}, g.Err()
	}
	_, err := autodiff.NewModel(ps, build, 0).Forward(map[string]*tensor.Dense{
		"x": tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{1, 2, 3, 4})),
	})
	fmt.Println(err != nil)
	// Output:
	// true
}

// The local mean of three values under a causal mask: query t averages the values of
// keys 0..t with weights softmax(scores).
func ExampleGraph_LocalMean() {
	ps, _ := autodiff.NewParams(autodiff.Float64, 1)
	build := func(g *autodiff.Graph) (autodiff.Outputs, error) {
		m := g.LocalMean(g.Input("s"), g.Input("v"), nil, autodiff.Mask{Causal: true})
		return autodiff.Outputs{Values: map[string]*autodiff.Node{"m": m}}, g.Err()
	}
	res, err := autodiff.NewModel(ps, build, 0).Forward(map[string]*tensor.Dense{
		"s": tensor.New(tensor.WithShape(1, 3, 3), tensor.WithBacking(make([]float64, 9))), // equal scores
		"v": tensor.New(tensor.WithShape(1, 3, 1), tensor.WithBacking([]float64{3, 6, 9})),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Values["m"].Data())
	// Output:
	// [3 4.5 6]
}

// A causal, hollow mask hides from query t the keys after it and its own: query 0 sees
// no key and gets 0, not NaN. A score of −Inf (outside a compact kernel) weighs 0, so
// query 2 averages key 0 alone.
func ExampleMask() {
	ps, _ := autodiff.NewParams(autodiff.Float64, 1)
	build := func(g *autodiff.Graph) (autodiff.Outputs, error) {
		m := g.LocalMean(g.Input("s"), g.Input("v"), nil, autodiff.Mask{Causal: true, Hollow: true})
		return autodiff.Outputs{Values: map[string]*autodiff.Node{"m": m}}, g.Err()
	}
	ninf := math.Inf(-1)
	res, err := autodiff.NewModel(ps, build, 0).Forward(map[string]*tensor.Dense{
		"s": tensor.New(tensor.WithShape(1, 3, 3), tensor.WithBacking([]float64{
			0, 0, 0,
			0, 0, 0,
			0, ninf, 0,
		})),
		"v": tensor.New(tensor.WithShape(1, 3, 1), tensor.WithBacking([]float64{3, 6, 9})),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%.2f\n", res.Values["m"].Data())
	// Output:
	// [0.00 3.00 3.00]
}

// CheckGradients compares the analytic gradient with finite differences.
func ExampleCheckGradients() {
	ps, _ := autodiff.NewParams(autodiff.Float64, 3)
	w, _ := ps.Scope("w").New("weight", []int{3}, autodiff.Normal(0, 1))
	build := func(g *autodiff.Graph) (autodiff.Outputs, error) {
		return autodiff.Outputs{Loss: g.Mean(g.Square(g.Tanh(g.Param(w))))}, g.Err()
	}
	worst, err := autodiff.CheckGradients(autodiff.NewModel(ps, build, 0), nil, autodiff.GradCheck{})
	fmt.Println(err, worst.CheckedValues)
	// Output:
	// <nil> 3
}

// FromRows and FromSlice build model inputs from Go slices: a matrix from its rows, a
// batch of sequences from its row-major values. Ragged rows or a shape that does not fit
// are errors, not panics.
func ExampleFromRows() {
	x, err := autodiff.FromRows([][]float32{{1, 2, 3}, {4, 5, 6}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(x.Shape(), x.Data())
	ids, err := autodiff.FromSlice([]int{3, 1, 4, 1, 5, 9}, 2, 3) // 2 sequences of 3 tokens
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ids.Shape(), ids.Data())
	_, err = autodiff.FromRows([][]float64{{1, 2}, {3}})
	fmt.Println(err)
	_, err = autodiff.FromSlice([]float64{1, 2, 3}, 2, 2)
	fmt.Println(err)
	// Output:
	// (2, 3) [1 2 3 4 5 6]
	// (2, 3) [3 1 4 1 5 9]
	// from rows: row 1 has length 1, row 0 has length 2
	// from slice: shape [2 2] holds more than the 3 values given
}
