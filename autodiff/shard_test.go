package autodiff

import (
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"gorgonia.org/tensor"
)

// seqModel is a small per-sequence model with the shapes of a language model: x
// [B, T, D] → logits [B·T, C] through a hidden layer, a causal mean over each
// sequence's positions (so that rows of one example meet, but examples never do),
// optional dropout, and a cross-entropy that ignores -1 targets (or, with sum, the sum
// of squared logits).
type seqModel struct {
	ps         *Params
	w1, b1, w2 *Param
	dropout    float64
	sum        bool
	batch      func(g *Graph, b int) *Batch // nil: the usual declaration
}

const seqT, seqD, seqC = 3, 4, 5

func newSeqModel(t *testing.T, dt Dtype) *seqModel {
	t.Helper()
	ps, err := NewParams(dt, 3)
	if err != nil {
		t.Fatal(err)
	}
	m := &seqModel{ps: ps}
	for _, p := range []struct {
		dst   **Param
		name  string
		shape []int
	}{{&m.w1, "w1", []int{seqD, 6}}, {&m.b1, "b1", []int{6}}, {&m.w2, "w2", []int{6, seqC}}} {
		if *p.dst, err = ps.Root().New(p.name, p.shape, Normal(0, 1)); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

func (m *seqModel) model(seed uint64) *Model {
	return NewModel(m.ps, func(g *Graph) (Outputs, error) {
		x := g.Input("x")
		if g.Err() != nil {
			return Outputs{}, g.Err()
		}
		s := x.Shape()
		b := s[0]
		h := g.Tanh(g.AddBias(g.MatMul(g.Reshape(x, []int{b * seqT, seqD}), g.Param(m.w1)), g.Param(m.b1)))
		// mix positions within each sequence: h_t + h_{t−1} (a shift along T)
		h3 := g.Reshape(h, []int{b, seqT, 6})
		prev := g.Concat(1, g.Scale(g.Slice(h3, 1, 0, 1), 0), g.Slice(h3, 1, 0, seqT-1))
		h = g.Reshape(g.Add(h3, prev), []int{b * seqT, 6})
		h = g.Dropout(h, m.dropout)
		logits := g.MatMul(h, g.Param(m.w2))
		out := Outputs{Values: map[string]*Node{"logits": logits, "hidden": g.Reshape(h, []int{b, seqT, 6})}}
		switch {
		case m.sum:
			out.Loss = g.Sum(g.Square(logits))
			out.Batch = &Batch{Examples: b, LossSum: true}
		default:
			out.Loss = g.CrossEntropy(logits, g.Input("targets"), -1)
			out.Batch = &Batch{Examples: b, LossItems: CountNotEqual("targets", -1)}
		}
		if m.batch != nil {
			out.Batch = m.batch(g, b)
		}
		return out, g.Err()
	}, seed)
}

// seqInputs returns B sequences; the targets of example 0 are all ignored and half of
// the others' are, so that the parts' means weigh differently.
func seqInputs(dt Dtype, b int, seed uint64) map[string]*tensor.Dense {
	rng := rand.New(rand.NewPCG(seed, 9))
	x := castTo(f32Round(randTensor(rng, 1, b, seqT, seqD)), dt)
	tg := make([]int, b*seqT)
	for i := range tg {
		tg[i] = rng.IntN(seqC)
		if i < seqT || rng.IntN(2) == 0 {
			tg[i] = -1
		}
	}
	return map[string]*tensor.Dense{"x": x, "targets": tensor.New(tensor.WithShape(b*seqT), tensor.WithBacking(tg))}
}

type runOut struct {
	loss   float64
	parts  int
	grads  map[string][]float64
	values map[string][]float64
	inGrad []float64
}

func runSeq(t *testing.T, mod *Model, in map[string]*tensor.Dense, mode RunMode) runOut {
	t.Helper()
	mod.Params().ZeroGrad()
	res, err := mod.Run(in, mode)
	if err != nil {
		t.Fatal(err)
	}
	o := runOut{loss: res.Loss, parts: res.Parts, grads: map[string][]float64{}, values: map[string][]float64{}}
	for _, p := range mod.Params().List() {
		g := make([]float64, p.Size())
		for i := range g {
			g[i] = p.GradAt(i)
		}
		o.grads[p.Name()] = g
	}
	for name, v := range res.Values {
		o.values[name] = floats(v)
	}
	if g := res.InputGrads["x"]; g != nil {
		o.inGrad = floats(g)
	}
	return o
}

// maxRelDiff returns max |a−b| / max(1, |b|).
func maxRelDiff(a, b []float64) float64 {
	d := 0.0
	for i := range a {
		d = max(d, math.Abs(a[i]-b[i])/max(1, math.Abs(b[i])))
	}
	return d
}

func compareRuns(t *testing.T, what string, got, want runOut, tol float64) float64 {
	t.Helper()
	worst := math.Abs(got.loss-want.loss) / max(1, math.Abs(want.loss))
	for name, w := range want.grads {
		worst = max(worst, maxRelDiff(got.grads[name], w))
	}
	for name, w := range want.values {
		if len(got.values[name]) != len(w) {
			t.Fatalf("%s: output %q has %d values, want %d", what, name, len(got.values[name]), len(w))
		}
		worst = max(worst, maxRelDiff(got.values[name], w))
	}
	if len(got.inGrad) != len(want.inGrad) {
		t.Fatalf("%s: input gradient has %d values, want %d", what, len(got.inGrad), len(want.inGrad))
	}
	worst = max(worst, maxRelDiff(got.inGrad, want.inGrad))
	if worst > tol || math.IsNaN(worst) {
		t.Errorf("%s: max relative difference %.3g from the whole batch, want ≤ %g", what, worst, tol)
	}
	return worst
}

// TestShardsMatchWhole runs batches as parts (even and uneven splits, more shards than
// examples) and compares the loss, every parameter gradient, the outputs and the input
// gradient with the same batch run whole.
func TestShardsMatchWhole(t *testing.T) {
	mode := RunMode{Backward: true, InputGrads: true}
	for _, dt := range []Dtype{Float64, Float32} {
		tol := 1e-13
		if dt == Float32 {
			tol = 2e-6
		}
		for _, sum := range []bool{false, true} {
			for _, c := range []struct{ b, shards, parts int }{{4, 2, 2}, {5, 2, 2}, {5, 3, 3}, {2, 3, 2}, {7, 4, 4}, {32, 2, 2}, {1, 2, 1}} {
				m := newSeqModel(t, dt)
				m.sum = sum
				mod := m.model(1)
				in := seqInputs(dt, c.b, uint64(c.b))
				if err := mod.SetShards(1); err != nil {
					t.Fatal(err)
				}
				whole := runSeq(t, mod, in, mode)
				if whole.parts != 1 {
					t.Fatalf("SetShards(1) ran %d parts", whole.parts)
				}
				if err := mod.SetShards(c.shards); err != nil {
					t.Fatal(err)
				}
				got := runSeq(t, mod, in, mode)
				if got.parts != c.parts {
					t.Fatalf("B=%d, %d shards: ran %d parts, want %d", c.b, c.shards, got.parts, c.parts)
				}
				d := compareRuns(t, dt.String(), got, whole, tol)
				t.Logf("%v sum=%v B=%d shards=%d: max relative difference %.2g", dt, sum, c.b, c.shards, d)
				// A forward-only run (evaluation) combines too.
				ev := runSeq(t, mod, in, RunMode{})
				if ev.parts != c.parts || math.Abs(ev.loss-whole.loss) > tol*max(1, math.Abs(whole.loss)) {
					t.Errorf("forward: %d parts, loss %v, want %v", ev.parts, ev.loss, whole.loss)
				}
			}
		}
	}
}

// TestShardsWeighParts checks that the combination weighs the parts by their scored
// items: the mean of the parts' means would differ from the batch's mean here.
func TestShardsWeighParts(t *testing.T) {
	m := newSeqModel(t, Float64)
	mod := m.model(1)
	in := seqInputs(Float64, 4, 4)
	_ = mod.SetShards(1)
	whole := runSeq(t, mod, in, RunMode{})
	var means []float64
	for _, r := range [][2]int{{0, 2}, {2, 4}} {
		part := map[string]*tensor.Dense{
			"x":       tensor.New(tensor.WithShape(2, seqT, seqD), tensor.WithBacking(in["x"].Float64s()[r[0]*seqT*seqD:r[1]*seqT*seqD])),
			"targets": tensor.New(tensor.WithShape(2*seqT), tensor.WithBacking(in["targets"].Ints()[r[0]*seqT:r[1]*seqT])),
		}
		means = append(means, runSeq(t, mod, part, RunMode{}).loss)
	}
	if naive := (means[0] + means[1]) / 2; math.Abs(naive-whole.loss) < 1e-3 {
		t.Fatalf("test inputs do not tell the weighted mean (%v) from the mean of means (%v)", whole.loss, naive)
	}
	_ = mod.SetShards(2)
	if got := runSeq(t, mod, in, RunMode{}); got.parts != 2 || math.Abs(got.loss-whole.loss) > 1e-14 {
		t.Errorf("2 parts: loss %v (%d parts), want %v", got.loss, got.parts, whole.loss)
	}
}

// TestShardsNothingScored: a batch whose targets are all ignored has loss 0 and zero
// gradients, as run whole.
func TestShardsNothingScored(t *testing.T) {
	m := newSeqModel(t, Float64)
	mod := m.model(1)
	in := seqInputs(Float64, 4, 4)
	for i := range in["targets"].Ints() {
		in["targets"].Ints()[i] = -1
	}
	_ = mod.SetShards(2)
	got := runSeq(t, mod, in, RunMode{Backward: true})
	if got.parts != 2 || got.loss != 0 {
		t.Fatalf("loss %v over %d parts, want 0 over 2", got.loss, got.parts)
	}
	for name, g := range got.grads {
		for _, v := range g {
			if v != 0 {
				t.Fatalf("gradient of %s has %v, want zeros", name, v)
			}
		}
	}
}

// TestShardsDropoutDeterministic: with dropout, a run as parts is the same for the same
// seed, replays from a saved generator state, and differs for another seed.
func TestShardsDropoutDeterministic(t *testing.T) {
	in := seqInputs(Float32, 6, 6)
	run := func(seed uint64, steps int) ([]runOut, *Model) {
		m := newSeqModel(t, Float32)
		m.dropout = 0.3
		mod := m.model(seed)
		_ = mod.SetShards(2)
		var outs []runOut
		for range steps {
			outs = append(outs, runSeq(t, mod, in, RunMode{Train: true, Backward: true}))
		}
		return outs, mod
	}
	a, mod := run(7, 2)
	b, _ := run(7, 2)
	c, _ := run(8, 1)
	for i := range a {
		if a[i].parts != 2 {
			t.Fatalf("ran %d parts, want 2", a[i].parts)
		}
		compareRuns(t, "same seed", a[i], b[i], 0)
	}
	if a[0].loss == a[1].loss {
		t.Error("two steps drew the same masks")
	}
	if a[0].loss == c[0].loss {
		t.Error("another seed drew the same masks")
	}
	st, _ := mod.RNGState()
	next := runSeq(t, mod, in, RunMode{Train: true, Backward: true})
	_ = mod.SetRNGState(st)
	compareRuns(t, "restored generator", runSeq(t, mod, in, RunMode{Train: true, Backward: true}), next, 0)
}

// TestShardsWhole: graphs that do not declare Batch, runs with taps and one-example
// batches run whole.
func TestShardsWhole(t *testing.T) {
	m := newSeqModel(t, Float64)
	m.batch = func(*Graph, int) *Batch { return nil }
	mod := m.model(1)
	_ = mod.SetShards(2)
	if got := runSeq(t, mod, seqInputs(Float64, 4, 4), RunMode{Backward: true}); got.parts != 1 {
		t.Errorf("a graph without Batch ran %d parts", got.parts)
	}
	mod = newSeqModel(t, Float64).model(1)
	_ = mod.SetShards(2)
	if got := runSeq(t, mod, seqInputs(Float64, 4, 4), RunMode{Taps: true}); got.parts != 1 {
		t.Errorf("a run with taps ran %d parts", got.parts)
	}
	if err := mod.SetShards(-1); err == nil {
		t.Error("SetShards(-1) accepted")
	}
}

// TestShardsBadBatch: a Batch that contradicts the inputs or does not say how the loss
// combines is an error naming the problem.
func TestShardsBadBatch(t *testing.T) {
	for _, c := range []struct {
		batch func(*Graph, int) *Batch
		want  string
	}{
		{func(_ *Graph, b int) *Batch { return &Batch{Examples: b + 1, LossSum: true} }, "Batch.Examples"},
		{func(_ *Graph, b int) *Batch { return &Batch{Examples: b} }, "LossItems"},
		{func(_ *Graph, b int) *Batch {
			return &Batch{Examples: b, LossSum: true, LossItems: CountNotEqual("targets", -1)}
		}, "both"},
	} {
		m := newSeqModel(t, Float64)
		m.batch = c.batch
		mod := m.model(1)
		_ = mod.SetShards(2)
		_, err := mod.Run(seqInputs(Float64, 4, 4), RunMode{Backward: true})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one naming %q", err, c.want)
		}
	}
}

// TestShardsAuto: by default a batch runs as GOMAXPROCS parts when every core gets a
// part and the parts are even to 5/4, else whole.
func TestShardsAuto(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, c := range []struct{ procs, b, parts int }{
		{2, 1, 1}, {2, 2, 2}, {2, 3, 1}, {2, 4, 2}, {2, 5, 2}, {2, 32, 2},
		{4, 3, 1}, {4, 5, 1}, {4, 8, 4}, {4, 9, 1}, {4, 10, 4}, {1, 8, 1},
	} {
		runtime.GOMAXPROCS(c.procs)
		mod := newSeqModel(t, Float64).model(1)
		if got := runSeq(t, mod, seqInputs(Float64, c.b, 1), RunMode{Backward: true}); got.parts != c.parts {
			t.Errorf("GOMAXPROCS %d, B = %d: %d parts, want %d", c.procs, c.b, got.parts, c.parts)
		}
	}
}

// TestShardsAutoWeighsParameters: by default a batch whose parts would hold fewer
// values of their own than twice the parameters (partsMin) runs whole, however many
// examples it has; a larger batch of the same model, or SetShards(2), runs as parts.
// The model is x[B, 32]·W[32, 32], summed squares: each part's own values are its rows
// of x, of the product and of their gradients (about 5·32 per example, 1024 parameter
// values, whose gradient is another 1024).
func TestShardsAutoWeighsParameters(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(2)
	const d = 32
	ps, err := NewParams(Float64, 3)
	if err != nil {
		t.Fatal(err)
	}
	w, err := ps.Root().New("w", []int{d, d}, Normal(0, 1))
	if err != nil {
		t.Fatal(err)
	}
	mod := NewModel(ps, func(g *Graph) (Outputs, error) {
		x := g.Input("x")
		if g.Err() != nil {
			return Outputs{}, g.Err()
		}
		y := g.MatMul(x, g.Param(w))
		return Outputs{Loss: g.Sum(g.Square(y)), Batch: &Batch{Examples: x.Shape()[0], LossSum: true}}, g.Err()
	}, 1)
	rng := rand.New(rand.NewPCG(4, 5))
	for _, c := range []struct {
		b, shards, parts int
		mode             RunMode
	}{
		{4, 0, 1, RunMode{Backward: true}},  // 2 examples a part: ~320 own values
		{16, 0, 1, RunMode{Backward: true}}, // ~1300
		{64, 0, 2, RunMode{Backward: true}}, // ~5100 ≥ 2·1024
		{16, 2, 2, RunMode{Backward: true}}, // asked for
		{16, 0, 1, RunMode{}},               // forward only: ~1000 own values
		{256, 0, 2, RunMode{}},              // ~8200
		{16, 0, 1, RunMode{Backward: true}}, // SetShards(0) again: whole again
	} {
		if err := mod.SetShards(c.shards); err != nil {
			t.Fatal(err)
		}
		whole := runSeq(t, mod, map[string]*tensor.Dense{"x": randTensor(rng, 1, c.b, d)}, c.mode)
		if whole.parts != c.parts {
			t.Errorf("B = %d, SetShards(%d), backward %v: %d parts, want %d", c.b, c.shards, c.mode.Backward, whole.parts, c.parts)
		}
	}
}
