package autodiff

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"testing"

	"gorgonia.org/tensor"
)

// TestCompiledSignaturesBounded runs a model on many input lengths (as decoding with a
// growing key/value cache does) under a small budget: the model keeps the graphs' values
// within the budget, keeps the most recently used signature, drops the least recently used
// one, and still computes right after dropping and recompiling a signature.
func TestCompiledSignaturesBounded(t *testing.T) {
	defer func(b int64) { signatureBudget = b }(signatureBudget)
	signatureBudget = 64 << 10 // the graphs below hold 2n+1 float64 values: about 20 of them fit
	ps, err := NewParams(Float64, 0)
	if err != nil {
		t.Fatal(err)
	}
	m := NewModel(ps, func(g *Graph) (Outputs, error) {
		return Outputs{Values: map[string]*Node{"y": g.Scale(g.Input("x"), 2)}}, g.Err()
	}, 0)
	run := func(n int) {
		t.Helper()
		x := make([]float64, n)
		for i := range x {
			x[i] = float64(i + 1)
		}
		res, err := m.Forward(map[string]*tensor.Dense{"x": tensor.New(tensor.WithShape(n), tensor.WithBacking(x))})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Values["y"].Data().([]float64); got[n-1] != 2*float64(n) {
			t.Fatalf("length %d: y[%d] = %g, want %g", n, n-1, got[n-1], 2*float64(n))
		}
	}
	kept := 0
	for n := 1; n <= 300; n++ {
		run(n)
		run(1) // length 1 stays the most recently used: never dropped
		if m.cache.bytes > signatureBudget {
			t.Fatalf("after length %d: %d bytes of compiled values, budget %d", n, m.cache.bytes, signatureBudget)
		}
		kept = max(kept, m.cache.len())
	}
	if kept < 2 || m.cache.len() >= 300 {
		t.Errorf("kept at most %d signatures, now %d: want several, far fewer than 300", kept, m.cache.len())
	}
	if _, ok := m.cache.get(signatureOf(t, m, 1)); !ok {
		t.Error("the most recently used signature (length 1) was dropped")
	}
	if _, ok := m.cache.get(signatureOf(t, m, 2)); ok {
		t.Error("the least recently used signature (length 2) is still kept")
	}
	run(2) // recompiled after being dropped
}

// signatureOf returns the key under which m compiles a forward run on a vector of n values.
func signatureOf(t *testing.T, m *Model, n int) []byte {
	t.Helper()
	key, _ := signature(nil, nil, map[string]*tensor.Dense{"x": tensor.New(tensor.WithShape(n), tensor.WithBacking(make([]float64, n)))}, RunMode{})
	return key
}

// TestOpsOfConstantsOnly: an op whose inputs are all constants (gorgonia keeps constants
// outside any graph) builds and computes; it failed with "No Graph Supplied" when the
// relative-position tables of relbias(M) * distance(s) were widened and broadcast.
func TestOpsOfConstantsOnly(t *testing.T) {
	ps, err := NewParams(Float64, 0)
	if err != nil {
		t.Fatal(err)
	}
	m := NewModel(ps, func(g *Graph) (Outputs, error) {
		a := g.ConstTensor([]int{2, 1}, []float64{1, 1})
		b := g.ConstTensor([]int{1, 3}, []float64{1, 2, 3})
		c := g.Add(g.ConstTensor([]int{2, 3}, []float64{0, 0, 0, 1, 1, 1}), g.ConstTensor([]int{2, 3}, make([]float64, 6)))
		return Outputs{Values: map[string]*Node{"y": g.Add(g.Add(g.MatMul(a, b), c), g.Input("x"))}}, g.Err()
	}, 0)
	res, err := m.Forward(map[string]*tensor.Dense{"x": tensor.New(tensor.WithShape(2, 3), tensor.WithBacking(make([]float64, 6)))})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Values["y"].Data().([]float64); fmt.Sprint(got) != "[1 2 3 2 3 4]" {
		t.Errorf("y = %v, want [1 2 3 2 3 4]", got)
	}
}

// TestDroppedGraphIsFreed: a graph the cache drops for a new signature is freed before
// the new graph's first run allocates its buffers, so that a process holds one of them
// at a time (the training and the evaluation graph at T = 4096). The first graph's
// values are about 60 MB, the second's 30; without the collection on dropping, or with
// gorgonia's finalizer on the machine (which keeps its registers through one more
// collection), the heap held both.
func TestDroppedGraphIsFreed(t *testing.T) {
	m := newMLP(t, Float32).model()
	saved := signatureBudget
	signatureBudget = 1 << 20
	defer func() { signatureBudget = saved }()
	in := func(rows int) map[string]*tensor.Dense {
		return map[string]*tensor.Dense{"x": tensor.New(tensor.WithShape(rows, 3), tensor.Of(tensor.Float32))}
	}
	heap := func() float64 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return float64(ms.HeapAlloc) / (1 << 20)
	}
	if _, err := m.ForwardBackward(in(1 << 20)); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	first := heap()
	if _, err := m.ForwardBackward(in(1 << 19)); err != nil {
		t.Fatal(err)
	}
	if got := heap(); got > 0.75*first {
		t.Errorf("after the second graph's run the heap holds %.0f MB; the first graph alone held %.0f MB: it was not freed", got, first)
	}
	if m.cache.len() != 1 {
		t.Errorf("the cache holds %d graphs, want 1", m.cache.len())
	}
}

// TestNewGraphCollectsFirst checks that a graph of collectAfterDrop bytes or more makes the
// Model collect before its first run allocates the buffers, even where the cache dropped
// nothing: the garbage left by what ran before it (loading a corpus, building the graph)
// would otherwise sit beside the new buffers at the process's peak. Automatic collection
// is off, so only the Model's own can count.
func TestNewGraphCollectsFirst(t *testing.T) {
	m := newMLP(t, Float32).model()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	numGC := func() uint32 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.NumGC
	}
	in := func(rows int) map[string]*tensor.Dense {
		return map[string]*tensor.Dense{"x": tensor.New(tensor.WithShape(rows, 3), tensor.Of(tensor.Float32))}
	}
	if _, err := m.ForwardBackward(in(4)); err != nil { // a small graph: no collection
		t.Fatal(err)
	}
	before := numGC()
	if _, err := m.ForwardBackward(in(4)); err != nil {
		t.Fatal(err)
	}
	if got := numGC() - before; got != 0 {
		t.Errorf("a run of a graph already compiled collected %d times, want 0", got)
	}
	before = numGC()
	if _, err := m.ForwardBackward(in(1 << 20)); err != nil {
		t.Fatal(err)
	}
	if got := numGC() - before; got == 0 {
		t.Error("the first run of a graph of a million rows did not collect before it")
	}
}
