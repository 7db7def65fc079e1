package train_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/dist"
	"github.com/locusml/locus/models/transformer"
	"github.com/locusml/locus/optim"
	"github.com/locusml/locus/train"
	"gorgonia.org/tensor"
)

// group is an in-process stand-in for MPI: P goroutines, one train.Reducer each, whose
// all-reduce sums in rank order under a barrier.
type group struct {
	size int
	mu   sync.Mutex
	cond *sync.Cond
	sum  []float64
	in   int    // contributions to sum so far in this round
	out  int    // members that have read sum
	gen  uint64 // rounds completed
}

func newGroup(size int) *group {
	g := &group{size: size}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// allReduce sums vals over the members.
func (g *group) allReduce(vals []float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.out > 0 { // the last round is still being read
		g.cond.Wait()
	}
	if g.in == 0 {
		g.sum = make([]float64, len(vals))
	}
	for i, v := range vals {
		g.sum[i] += v
	}
	g.in++
	gen := g.gen
	if g.in == g.size {
		g.gen++
		g.cond.Broadcast()
	}
	for g.gen == gen {
		g.cond.Wait()
	}
	copy(vals, g.sum)
	g.out++
	if g.out == g.size {
		g.in, g.out = 0, 0
		g.cond.Broadcast()
	}
}

type member struct {
	g    *group
	rank int
}

func (m member) Rank() int { return m.rank }
func (m member) Size() int { return m.g.size }

func (m member) BroadcastParams(ps *autodiff.Params) error {
	for _, p := range ps.List() {
		v := make([]float64, p.Size())
		if m.rank == 0 {
			for i := range v {
				v[i] = p.At(i)
			}
		}
		m.g.allReduce(v)
		if err := p.SetFloat64s(v); err != nil {
			return err
		}
	}
	return nil
}

func (m member) AverageGrads(ps *autodiff.Params, weight float64, extra []float64) (float64, error) {
	var buf []float64
	for _, p := range ps.List() {
		for i := range p.Size() {
			buf = append(buf, weight*p.GradAt(i))
		}
	}
	buf = append(append(buf, weight), extra...)
	m.g.allReduce(buf)
	total := buf[len(buf)-1-len(extra)]
	copy(extra, buf[len(buf)-len(extra):])
	k := 0
	for _, p := range ps.List() {
		for i := range p.Size() {
			g := buf[k] / total
			switch v := p.Grad().Data().(type) {
			case []float32:
				v[i] = float32(g)
			case []float64:
				v[i] = g
			}
			k++
		}
	}
	return total, nil
}

func (m member) SameParams(ps *autodiff.Params) (bool, error) {
	h := dist.Checksum(ps)
	var v [8]float64
	for k := range 4 {
		x := float64((h >> (16 * k)) & 0xffff)
		v[k], v[4+k] = x, x*x
	}
	m.g.allReduce(v[:])
	for k := range 4 {
		if float64(m.g.size)*v[4+k] != v[k]*v[k] {
			return false, nil
		}
	}
	return true, nil
}

// trainDenoise trains a small encoder on denoise-reverse (a random number of scored
// positions per sequence, so that parts of a batch weigh differently) for steps steps of
// batch 12 and returns its parameters; red == nil is one process.
func trainDenoise(t *testing.T, red train.Reducer, steps int, dir string, hooks ...func(*autodiff.Params) train.Hook) (*autodiff.Params, error) {
	t.Helper()
	return trainDenoiseCtx(context.Background(), t, red, steps, 1, dir, hooks...)
}

// trainDenoiseCtx is trainDenoise with a context and accum batches per step.
func trainDenoiseCtx(ctx context.Context, t *testing.T, red train.Reducer, steps, accum int, dir string, hooks ...func(*autodiff.Params) train.Hook) (*autodiff.Params, error) {
	t.Helper()
	d := transformer.DataConfig{Task: "denoise-reverse", Batch: 12, Seed: 3}
	data, err := d.Open()
	if err != nil {
		t.Fatal(err)
	}
	cfg := transformer.DefaultConfig(transformer.ArchEncoder, data.ModelVocab(transformer.ArchEncoder), data.SeqLen())
	cfg.Dim, cfg.Heads, cfg.Hidden, cfg.Layers = 16, 2, 32, 1
	ps, err := autodiff.NewParams(autodiff.Float64, 5)
	if err != nil {
		t.Fatal(err)
	}
	model, err := transformer.New(cfg, ps)
	if err != nil {
		t.Fatal(err)
	}
	opt, err := optim.NewAdam(optim.All(ps.List()), optim.DefaultAdamConfig())
	if err != nil {
		t.Fatal(err)
	}
	td, err := data.Train(cfg.Arch, 4)
	if err != nil {
		t.Fatal(err)
	}
	run := autodiff.NewModel(ps, model.Builder(), 1)
	var hs []train.Hook
	for _, h := range hooks {
		hs = append(hs, h(ps))
	}
	loop := &train.Loop{Model: run, Optimizer: opt, Data: td, Steps: steps, LogEvery: 5, Reducer: red, Dir: dir, Hooks: hs, Accumulate: accum,
		Eval: func(ctx context.Context) (train.Metrics, error) { return data.Metrics(ctx, run, cfg.Arch, 20, 9) }}
	_, err = loop.Run(ctx)
	return ps, err
}

func maxAbsDiff(a, b *autodiff.Params) float64 {
	var d float64
	for _, p := range a.List() {
		q := b.Get(p.Name())
		for i := range p.Size() {
			d = math.Max(d, math.Abs(p.At(i)-q.At(i)))
		}
	}
	return d
}

// TestDataParallelEqualsOneProcess trains on 3 in-process ranks (a batch of 12 split
// 4+4+4, with different numbers of scored tokens per part) and on one process: the
// weights agree to float64 round-off, so the parts are weighed by their scored tokens.
func TestDataParallelEqualsOneProcess(t *testing.T) {
	const steps = 20
	ref, err := trainDenoise(t, nil, steps, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{2, 5} {
		g := newGroup(size)
		got := make([]*autodiff.Params, size)
		errs := make([]error, size)
		var wg sync.WaitGroup
		dir := t.TempDir()
		for r := range size {
			wg.Go(func() { got[r], errs[r] = trainDenoise(t, member{g, r}, steps, dir) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		for r := range size {
			if d := maxAbsDiff(ref, got[r]); d > 1e-12 {
				t.Errorf("%d processes, rank %d: weights differ from one process's by %g, want <= 1e-12", size, r, d)
			} else {
				t.Logf("%d processes, rank %d: max abs difference from one process %.3g", size, r, d)
			}
		}
		if _, err := train.LoadCheckpoint(dir); err != nil {
			t.Errorf("rank 0's checkpoint: %v", err)
		}
	}
}

// TestDataParallelAccumulates: with 3 batches per step, averaging after each batch
// gives the step of one process.
func TestDataParallelAccumulates(t *testing.T) {
	ref, err := trainDenoiseCtx(context.Background(), t, nil, 8, 3, "")
	if err != nil {
		t.Fatal(err)
	}
	g := newGroup(2)
	got := make([]*autodiff.Params, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Go(func() { got[r], errs[r] = trainDenoiseCtx(context.Background(), t, member{g, r}, 8, 3, "") })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if d := maxAbsDiff(ref, got[1]); d > 1e-12 {
		t.Errorf("weights differ from one process's by %g, want <= 1e-12", d)
	}
}

// TestDataParallelDetectsDivergence perturbs one rank's weights after step 3: the
// checksums of step 5 stop every rank with ErrOutOfSync.
func TestDataParallelDetectsDivergence(t *testing.T) {
	g := newGroup(2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Go(func() {
			perturb := func(ps *autodiff.Params) train.Hook {
				return train.Hook{Every: 3, Func: func(_ context.Context, p train.Progress) error {
					if r == 1 && p.Step == 3 {
						w := ps.List()[0]
						w.SetAt(0, w.At(0)+1e-3)
					}
					return nil
				}}
			}
			_, errs[r] = trainDenoise(t, member{g, r}, 20, "", perturb)
		})
	}
	wg.Wait()
	for r, err := range errs {
		if !errors.Is(err, train.ErrOutOfSync) || !strings.Contains(err.Error(), "step 5") {
			t.Errorf("rank %d: got %v, want ErrOutOfSync at step 5", r, err)
		}
	}
}

// TestDataParallelNeedsSplitter refuses Data that cannot be split across processes.
func TestDataParallelNeedsSplitter(t *testing.T) {
	ps, _ := autodiff.NewParams(autodiff.Float32, 1)
	w, _ := ps.Root().New("w", []int{1}, autodiff.Zeros())
	opt, _ := optim.NewSGD(optim.All([]*autodiff.Param{w}), optim.DefaultSGDConfig())
	data := train.NewData(func() (train.Batch, error) { return train.Batch{}, nil }, func() int { return 0 }, func(int) error { return nil })
	loop := &train.Loop{Model: autodiff.NewModel(ps, nil, 0), Optimizer: opt, Data: data, Steps: 1, Reducer: member{newGroup(2), 0}}
	if _, err := loop.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "not a Splitter") {
		t.Fatalf("got %v, want an error naming Splitter", err)
	}
}

// TestPartAndRows splits 7 examples in 3 contiguous parts, with a [B·T] input.
func TestPartAndRows(t *testing.T) {
	var got [][2]int
	for p := range 3 {
		lo, hi := train.Part(7, p, 3)
		got = append(got, [2]int{lo, hi})
	}
	if want := [][2]int{{0, 3}, {3, 5}, {5, 7}}; !slices.Equal(got, want) {
		t.Fatalf("Part(7, ·, 3) = %v, want %v", got, want)
	}
	ids := make([]int, 7*2)
	for i := range ids {
		ids[i] = i
	}
	b := train.Batch{Items: 7, Inputs: map[string]*tensor.Dense{
		"ids":  tensor.New(tensor.WithShape(7, 2), tensor.WithBacking(slices.Clone(ids))),
		"flat": tensor.New(tensor.WithShape(14), tensor.WithBacking(slices.Clone(ids))),
	}}
	p, err := train.Rows(b, 7, 3, 5)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]int{"ids": {6, 7, 8, 9}, "flat": {6, 7, 8, 9}} {
		if got := p.Inputs[name].Data().([]int); !slices.Equal(got, want) {
			t.Errorf("%s: rows [3, 5) = %v, want %v", name, got, want)
		}
	}
	if s := p.Inputs["ids"].Shape(); s[0] != 2 || s[1] != 2 || p.Items != 2 {
		t.Errorf("shape %v, items %d; want [2 2], 2", s, p.Items)
	}
	if _, err := train.Rows(b, 3, 0, 1); err == nil {
		t.Error("Rows of 3 examples of a 7-row batch: no error")
	}
	// An empty range (a part of a batch smaller than the parts) has no inputs to read.
	if p, err := train.Rows(b, 7, 7, 7); err != nil || p.Items != 0 || len(p.Inputs) != 0 {
		t.Errorf("rows [7, 7): %d items, %d inputs, %v; want an empty batch", p.Items, len(p.Inputs), err)
	}
}

// TestDataParallelCancelStopsAll cancels the context of rank 1 only: both ranks stop
// after the same step, and rank 0 saves the checkpoint.
func TestDataParallelCancelStopsAll(t *testing.T) {
	g := newGroup(2)
	errs := make([]error, 2)
	steps := make([]int, 2)
	dir := t.TempDir()
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Go(func() {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stopAt := func(ps *autodiff.Params) train.Hook {
				return train.Hook{Every: 1, Func: func(_ context.Context, p train.Progress) error {
					steps[r] = p.Step
					if r == 1 && p.Step == 7 {
						cancel()
					}
					return nil
				}}
			}
			_, errs[r] = trainDenoiseCtx(ctx, t, member{g, r}, 20, 1, dir, stopAt)
		})
	}
	wg.Wait()
	for r, err := range errs {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("rank %d: got %v, want context.Canceled", r, err)
		}
	}
	if steps[0] != steps[1] {
		t.Errorf("the ranks stopped after steps %d and %d", steps[0], steps[1])
	}
	ck, err := train.LoadCheckpoint(dir)
	if err != nil || ck.Step != 8 {
		t.Fatalf("checkpoint: %v, step %v; want step 8", err, ck)
	}
}
