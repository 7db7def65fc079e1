package autodiff

import (
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

func TestActivationsFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 1))
	x := awayFromZero(rng, 3, 5000) // several parallel blocks
	checkFloat32(t, "ReLU", map[string]*tensor.Dense{"x": x}, func(g *Graph, p map[string]*Node) *Node { return g.ReLU(p["x"]) })
	checkFloat32(t, "Sigmoid", map[string]*tensor.Dense{"x": randTensor(rng, 4, 3, 5000)}, func(g *Graph, p map[string]*Node) *Node {
		return g.Sigmoid(p["x"])
	})
}

func TestReLUAtZero(t *testing.T) {
	// As gorgonia's Rectify: the gradient at exactly 0 passes through.
	_, grads := runGrads(t, Float64, map[string]*tensor.Dense{"x": denseOf([]int{3}, -1, 0, 2)}, func(g *Graph, p map[string]*Node) *Node {
		return g.ReLU(p["x"])
	})
	_, ref := runGrads(t, Float64, map[string]*tensor.Dense{"x": denseOf([]int{3}, 5, 5, 5)}, func(g *Graph, p map[string]*Node) *Node {
		return g.ReLU(p["x"])
	})
	if grads["x"][0] != 0 || grads["x"][1] != ref["x"][1] || grads["x"][2] != ref["x"][2] {
		t.Fatalf("ReLU gradients %v, want [0 %v %v]", grads["x"], ref["x"][1], ref["x"][2])
	}
}
