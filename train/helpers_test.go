package train

import (
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/optim"
	"gorgonia.org/tensor"
)

// regressionData serves mini-batches of a 1-D regression curve in a seeded, shuffled
// order whose position is a datasets.IteratorState.
type regressionData struct {
	x, y  []float64
	it    *datasets.Iterator
	nanAt int // Next returns a NaN input on this call (1-based); 0: never
	calls int
}

func newRegressionData(t testing.TB, n, batch int) *regressionData {
	t.Helper()
	x, y, err := datasets.Regression("sin", n, 0.05, 7)
	if err != nil {
		t.Fatal(err)
	}
	it, err := datasets.NewIterator(datasets.IteratorConfig{N: n, BatchSize: batch, Seed: 11, Shuffle: true})
	if err != nil {
		t.Fatal(err)
	}
	return &regressionData{x: x, y: y, it: it}
}

func (d *regressionData) Next() (Batch, error) {
	d.calls++
	idx, _ := d.it.Next()
	xs, ys := make([]float32, len(idx)), make([]float32, len(idx))
	for i, j := range idx {
		xs[i], ys[i] = float32(d.x[j]), float32(d.y[j])
	}
	if d.calls == d.nanAt {
		xs[0] = float32(math.NaN())
	}
	return Batch{Inputs: map[string]*tensor.Dense{
		"x": tensor.New(tensor.WithShape(len(idx), 1), tensor.WithBacking(xs)),
		"y": tensor.New(tensor.WithShape(len(idx), 1), tensor.WithBacking(ys)),
	}, Items: len(idx)}, nil
}

func (d *regressionData) State() (json.RawMessage, error) { return json.Marshal(d.it.State()) }

func (d *regressionData) Restore(b json.RawMessage) error {
	var st datasets.IteratorState
	if err := json.Unmarshal(b, &st); err != nil {
		return err
	}
	return d.it.Restore(st)
}

// mlpConfig is the model configuration saved with checkpoints.
type mlpConfig struct {
	Hidden  int     `json:"hidden"`
	Dropout float64 `json:"dropout"`
	Extra   bool    `json:"extra,omitempty"` // adds a parameter, to make "another model"
}

// newMLP builds y = W2·dropout(tanh(W1·x + b1)) + b2 with an MSE loss, float32. Its
// examples are independent (autodiff.Batch): a batch may run as parts.
func newMLP(t testing.TB, cfg mlpConfig, seed uint64) *autodiff.Model {
	t.Helper()
	ps, err := autodiff.NewParams(autodiff.Float32, seed)
	if err != nil {
		t.Fatal(err)
	}
	must := func(p *autodiff.Param, err error) *autodiff.Param {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	w1 := must(ps.Scope("fc1").New("weight", []int{1, cfg.Hidden}, autodiff.TorchLinear(1)))
	b1 := must(ps.Scope("fc1").New("bias", []int{cfg.Hidden}, autodiff.TorchLinear(1)))
	w2 := must(ps.Scope("fc2").New("weight", []int{cfg.Hidden, 1}, autodiff.TorchLinear(cfg.Hidden)))
	b2 := must(ps.Scope("fc2").New("bias", []int{1}, autodiff.TorchLinear(cfg.Hidden)))
	if cfg.Extra {
		must(ps.Scope("fc3").New("weight", []int{2, 2}, autodiff.Zeros()))
	}
	build := func(g *autodiff.Graph) (autodiff.Outputs, error) {
		h := g.Tanh(g.AddBias(g.MatMul(g.Input("x"), g.Param(w1)), g.Param(b1)))
		h = g.Dropout(h, cfg.Dropout)
		pred := g.AddBias(g.MatMul(h, g.Param(w2)), g.Param(b2))
		loss := g.Mean(g.Square(g.Sub(pred, g.Input("y"))))
		if g.Err() != nil {
			return autodiff.Outputs{}, g.Err()
		}
		batch := &autodiff.Batch{Examples: pred.Shape()[0], LossItems: func(in map[string]*tensor.Dense) float64 {
			return float64(in["y"].Shape()[0])
		}}
		return autodiff.Outputs{Loss: loss, Values: map[string]*autodiff.Node{"pred": pred}, Batch: batch}, nil
	}
	return autodiff.NewModel(ps, build, seed+1)
}

// fullBatchEval returns an Eval computing the MSE over all of d's points.
func fullBatchEval(m *autodiff.Model, d *regressionData) func(context.Context) (Metrics, error) {
	xs, ys := make([]float32, len(d.x)), make([]float32, len(d.y))
	for i := range d.x {
		xs[i], ys[i] = float32(d.x[i]), float32(d.y[i])
	}
	in := map[string]*tensor.Dense{
		"x": tensor.New(tensor.WithShape(len(xs), 1), tensor.WithBacking(xs)),
		"y": tensor.New(tensor.WithShape(len(ys), 1), tensor.WithBacking(ys)),
	}
	return func(ctx context.Context) (Metrics, error) {
		res, err := m.Forward(in)
		if err != nil {
			return nil, err
		}
		return Metrics{"loss": res.Loss}, nil
	}
}

// newLoop returns a Loop over a fresh model, Adam and data, all seeded identically for
// equal arguments.
func newLoop(t testing.TB, steps int, dir string) *Loop {
	t.Helper()
	cfg := mlpConfig{Hidden: 16, Dropout: 0.1}
	m := newMLP(t, cfg, 1)
	opt, err := optim.NewAdam(optim.All(m.Params().List()), optim.AdamConfig{
		LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, MaxGradNorm: 1,
		Schedule: optim.WithWarmup(10, optim.Cosine{Steps: 300, MinFactor: 0.1}),
	})
	if err != nil {
		t.Fatal(err)
	}
	d := newRegressionData(t, 64, 16)
	return &Loop{
		Model: m, Optimizer: opt, Data: d, Eval: fullBatchEval(m, d),
		Steps: steps, Dir: dir, LogEvery: 10, EvalEvery: 50,
		ItemsName: "samples", ModelConfig: cfg, DataConfig: map[string]any{"curve": "sin", "n": 64},
	}
}

// lossRecorder is a Hook that keeps every step's loss.
func lossRecorder(losses *[]float64) Hook {
	return Hook{Every: 1, Func: func(_ context.Context, p Progress) error {
		if !p.Done {
			*losses = append(*losses, p.Loss)
		}
		return nil
	}}
}

// paramBits returns the parameters' values as bit patterns, for exact comparison.
func paramBits(ps *autodiff.Params) map[string][]uint32 {
	out := map[string][]uint32{}
	for _, p := range ps.List() {
		for _, v := range p.Float32s() {
			out[p.Name()] = append(out[p.Name()], math.Float32bits(v))
		}
	}
	return out
}
