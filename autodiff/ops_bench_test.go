package autodiff

import (
	"math/rand/v2"
	"syscall"
	"testing"

	"gorgonia.org/tensor"
)

// Benchmarks of the hot fused ops at the reference workloads' shapes (float32, forward
// and backward). They run only with -bench.

func benchOp(b *testing.B, inputs map[string][]int, ints map[string]*tensor.Dense, f func(g *Graph) *Node) {
	rng := rand.New(rand.NewPCG(1, 1))
	ps, _ := NewParams(Float32, 0)
	in := map[string]*tensor.Dense{}
	for n, s := range inputs {
		size := 1
		for _, d := range s {
			size *= d
		}
		v := make([]float32, size)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		in[n] = tensor.New(tensor.WithShape(s...), tensor.WithBacking(v))
	}
	for n, t := range ints {
		in[n] = t
	}
	m := NewModel(ps, func(g *Graph) (Outputs, error) { return Outputs{Loss: f(g)}, g.Err() }, 0)
	mode := RunMode{InputGrads: true}
	if _, err := m.Run(in, mode); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu0 := processCPU()
	for b.Loop() {
		if _, err := m.Run(in, mode); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((processCPU()-cpu0)*1e6/float64(b.N), "cpu-µs/op")
}

// processCPU returns this process's user and system CPU time in seconds: with
// GOMAXPROCS=1 the work of the op alone, which moves far less with the other processes
// of a shared machine than ns/op does.
func processCPU() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// charlm's fc1: [32, 64, 64] → [32, 64, 256].
func BenchmarkLinearCharLM(b *testing.B) {
	benchOp(b, map[string][]int{"x": {32, 64, 64}, "w": {256, 64}, "b": {256}}, nil, func(g *Graph) *Node {
		return g.Sum(g.Linear(g.Input("x"), g.Input("w"), g.Input("b")))
	})
}

// The DAE's first layer: [128, 784] · [784, 256].
func BenchmarkMatMulDAE(b *testing.B) {
	benchOp(b, map[string][]int{"x": {128, 784}, "w": {784, 256}}, nil, func(g *Graph) *Node {
		return g.Sum(g.MatMul(g.Input("x"), g.Input("w")))
	})
}

// The attn workload's core: B=32, T=128, 8 heads of 16, causal.
func BenchmarkAttentionAttn(b *testing.B) {
	benchOp(b, map[string][]int{"q": {32, 128, 128}, "k": {32, 128, 128}, "v": {32, 128, 128}}, nil, func(g *Graph) *Node {
		return g.Sum(g.Attention(g.Input("q"), g.Input("k"), g.Input("v"), nil, 8, 0.25, Mask{Causal: true}))
	})
}

func BenchmarkLayerNormCharLM(b *testing.B) {
	benchOp(b, map[string][]int{"x": {32, 64, 64}, "w": {64}, "b": {64}}, nil, func(g *Graph) *Node {
		return g.Sum(g.LayerNorm(g.Input("x"), g.Input("w"), g.Input("b"), 1e-5))
	})
}

func BenchmarkGELUCharLM(b *testing.B) {
	benchOp(b, map[string][]int{"x": {32, 64, 256}}, nil, func(g *Graph) *Node {
		return g.Sum(g.GELU(g.Input("x"), GELUTanh))
	})
}

func BenchmarkCrossEntropyCharLM(b *testing.B) {
	t := make([]int, 2048)
	for i := range t {
		t[i] = i % 65
	}
	benchOp(b, map[string][]int{"logits": {2048, 65}}, map[string]*tensor.Dense{"t": tensor.New(tensor.WithShape(2048), tensor.WithBacking(t))}, func(g *Graph) *Node {
		return g.CrossEntropy(g.Input("logits"), g.Input("t"), -100)
	})
}

// The residual sum x + f(x) of a charlm part: [16, 64, 64] float32 (-cpu 1).
func BenchmarkResidualAddCharLM(b *testing.B) {
	n := 16 * 64 * 64
	x, y, out := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], y[i] = float32(i%7), float32(i%5)
	}
	b.SetBytes(int64(12 * n))
	for b.Loop() {
		binaryFwdRange(binAdd, x, y, out)
	}
}

// The DAE's output activation: sigmoid of [128, 784], forward and backward.
func BenchmarkSigmoidDAE(b *testing.B) {
	benchOp(b, map[string][]int{"x": {128, 784}}, nil, func(g *Graph) *Node {
		return g.Sum(g.Sigmoid(g.Input("x")))
	})
}
