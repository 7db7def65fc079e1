package train

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/optim"
	"gorgonia.org/tensor"
)

// readMetrics parses a run's metrics log, failing on any malformed line.
func readMetrics(t *testing.T, dir string) []Record {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s line %d %q: %v", MetricsFile, len(out)+1, sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

// deterministic drops the timing metrics of records.
func deterministic(rs []Record) []Record {
	out := make([]Record, len(rs))
	for i, r := range rs {
		m := Metrics{}
		for k, v := range r.Metrics {
			if k != MetricItemsPerS && k != MetricStepsPerS {
				m[k] = v
			}
		}
		out[i] = Record{Step: r.Step, Metrics: m}
	}
	return out
}

func latest(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, LatestFile))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestResumeIsBitIdentical stops a run and resumes it, with each batch run whole and as
// two parts (autodiff.Model.SetShards; the model has dropout, drawn per part).
func TestResumeIsBitIdentical(t *testing.T) {
	for _, shards := range []int{1, 2} {
		t.Run(fmt.Sprintf("shards%d", shards), func(t *testing.T) { testResumeIsBitIdentical(t, shards) })
	}
}

func testResumeIsBitIdentical(t *testing.T, shards int) {
	ctx := context.Background()
	dirA, dirB := t.TempDir(), t.TempDir()
	newLoop := func(t *testing.T, steps int, dir string) *Loop {
		l := newLoop(t, steps, dir)
		if err := l.Model.SetShards(shards); err != nil {
			t.Fatal(err)
		}
		return l
	}

	var lossesA []float64
	a := newLoop(t, 200, dirA)
	a.CheckpointEvery = 50
	a.Hooks = []Hook{lossRecorder(&lossesA)}
	sumA, err := a.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}

	var lossesB []float64
	b1 := newLoop(t, 100, dirB)
	b1.CheckpointEvery = 50
	b1.Hooks = []Hook{lossRecorder(&lossesB)}
	if _, err := b1.Run(ctx); err != nil {
		t.Fatal(err)
	}
	b2 := newLoop(t, 200, "") // Dir comes from the checkpoint
	b2.CheckpointEvery = 50
	b2.Hooks = []Hook{lossRecorder(&lossesB)}
	if err := b2.Resume(dirB); err != nil {
		t.Fatal(err)
	}
	if b2.Dir != dirB || b2.Step() != 100 {
		t.Fatalf("after Resume: Dir %q step %d, want %q and 100", b2.Dir, b2.Step(), dirB)
	}
	sumB, err := b2.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}

	if len(lossesA) != 200 || !slices.Equal(lossesA, lossesB) {
		t.Errorf("losses differ: %d steps in one run, %d resumed; first difference at %d",
			len(lossesA), len(lossesB), firstDiff(lossesA, lossesB))
	}
	if !reflect.DeepEqual(paramBits(a.Model.Params()), paramBits(b2.Model.Params())) {
		t.Error("final weights differ")
	}
	if sumA.Loss != sumB.Loss || sumA.Eval["loss"] != sumB.Eval["loss"] || sumB.Step != 200 {
		t.Errorf("summaries differ: %+v vs %+v", sumA, sumB)
	}
	if !reflect.DeepEqual(a.Optimizer.State(), b2.Optimizer.State()) {
		t.Error("optimizer states differ")
	}
	ra, rb := deterministic(readMetrics(t, dirA)), deterministic(readMetrics(t, dirB))
	if !reflect.DeepEqual(ra, rb) {
		t.Errorf("metrics logs differ:\n%v\n%v", ra, rb)
	}
	// The final checkpoints agree too.
	ckA, err := LoadCheckpoint(dirA)
	if err != nil {
		t.Fatal(err)
	}
	ckB, err := LoadCheckpoint(dirB)
	if err != nil {
		t.Fatal(err)
	}
	if ckA.Step != 200 || ckB.Step != 200 || !reflect.DeepEqual(ckA.Params, ckB.Params) || !bytes.Equal(ckA.RNG, ckB.RNG) {
		t.Error("final checkpoints differ")
	}
}

func firstDiff(a, b []float64) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestCancelSavesCheckpointAndResumes(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := newLoop(t, 80, dir)
	l.Hooks = []Hook{{Every: 37, Func: func(context.Context, Progress) error { cancel(); return nil }}}
	sum, err := l.Run(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v, want an error wrapping context.Canceled", err)
	}
	want := filepath.Join(dir, "step-000037")
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name the checkpoint %s", err, want)
	}
	if sum == nil || sum.Checkpoint != want || sum.Step != 37 {
		t.Errorf("summary %+v, want checkpoint %s at step 37", sum, want)
	}
	ck, err := LoadCheckpoint(dir)
	if err != nil || ck.Step != 37 {
		t.Fatalf("LoadCheckpoint: step %v, %v; want 37", ck, err)
	}

	// Resuming from the interruption reaches the weights of an uninterrupted run.
	r := newLoop(t, 80, dir)
	if err := r.Resume(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	ref := newLoop(t, 80, t.TempDir())
	if _, err := ref.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(paramBits(r.Model.Params()), paramBits(ref.Model.Params())) {
		t.Error("weights after cancel and resume differ from an uninterrupted run")
	}
}

func TestKeepLastPrunes(t *testing.T) {
	dir := t.TempDir()
	l := newLoop(t, 60, dir)
	l.CheckpointEvery, l.KeepLast = 10, 3
	if _, err := l.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	want := []string{LatestFile, RunFile, PlotFile, MetricsFile, "step-000040", "step-000050", "step-000060"}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("run directory holds %v, want %v", got, want)
	}
	if latest(t, dir) != "step-000060" {
		t.Errorf("LATEST = %q", latest(t, dir))
	}
}

// scriptedEval returns the values in order, one per evaluation, as "loss".
func scriptedEval(vals ...float64) func(context.Context) (Metrics, error) {
	i := 0
	return func(context.Context) (Metrics, error) {
		v := vals[min(i, len(vals)-1)]
		i++
		return Metrics{"loss": v, "accuracy": -v}, nil
	}
}

func TestBestCheckpointAndEarlyStopping(t *testing.T) {
	for _, mode := range []string{"min", "max"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			l := newLoop(t, 200, dir)
			l.EvalEvery, l.CheckpointEvery, l.Patience = 10, 20, 3
			l.Best, l.BestMode = "val_loss", mode
			vals := []float64{5, 3, 4, 2, 6, 7, 8, 9, 1}
			if mode == "max" {
				l.Best = "val_accuracy"
			}
			l.Eval = scriptedEval(vals...)
			var atBest map[string][]uint32
			l.Hooks = []Hook{{Every: 10, Func: func(_ context.Context, p Progress) error {
				if p.Step == 40 {
					atBest = paramBits(l.Model.Params())
				}
				return nil
			}}}
			sum, err := l.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !sum.StoppedEarly || sum.Step != 70 || sum.BestStep != 40 {
				t.Fatalf("summary %+v, want an early stop at step 70 with the best at step 40", sum)
			}
			wantBest := 2.0
			if mode == "max" {
				wantBest = -2
			}
			if sum.BestValue != wantBest {
				t.Errorf("best value %v, want %v", sum.BestValue, wantBest)
			}
			if !reflect.DeepEqual(paramBits(l.Model.Params()), atBest) {
				t.Error("the model does not hold the best weights after early stopping")
			}
			best, err := LoadCheckpoint(filepath.Join(dir, BestDir))
			if err != nil {
				t.Fatal(err)
			}
			if best.Step != 40 || best.Loop.BestStep != 40 {
				t.Errorf("best checkpoint at step %d (loop %+v), want 40", best.Step, best.Loop)
			}
			if err := best.ApplyParams(l.Model.Params()); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(paramBits(l.Model.Params()), atBest) {
				t.Error("the best checkpoint does not hold the weights of step 40")
			}
			if latest(t, dir) != "step-000070" {
				t.Errorf("LATEST = %q, want the last step checkpoint step-000070", latest(t, dir))
			}

			// A resumed run knows the best so far and still restores it.
			r := newLoop(t, 200, "")
			r.EvalEvery, r.Patience, r.Best, r.BestMode = 10, 5, l.Best, mode
			r.Eval = scriptedEval(10, 10, 10, 10, 10, 10)
			if err := r.Resume(filepath.Join(dir, "step-000060")); err != nil {
				t.Fatal(err)
			}
			sum, err = r.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if sum.BestStep != 40 || !sum.StoppedEarly || sum.Step != 90 {
				t.Errorf("resumed summary %+v, want best at 40 and a stop at step 90", sum)
			}
			if !reflect.DeepEqual(paramBits(r.Model.Params()), atBest) {
				t.Error("the resumed run did not restore the best weights")
			}
		})
	}
}

func TestMetricsLogAndPlot(t *testing.T) {
	dir := t.TempDir()
	l := newLoop(t, 45, dir)
	l.EvalEvery = 20
	if _, err := l.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	rs := readMetrics(t, dir)
	var steps []int
	for _, r := range rs {
		steps = append(steps, r.Step)
		for _, k := range []string{MetricLoss, MetricLR, MetricGradNorm, MetricItemsPerS} {
			if v, ok := r.Metrics[k]; !ok || math.IsNaN(v) {
				t.Errorf("step %d: %s missing", r.Step, k)
			}
		}
		_, hasVal := r.Metrics["val_loss"]
		if wantVal := r.Step%20 == 0 || r.Step == 45; hasVal != wantVal {
			t.Errorf("step %d: val_loss present %v, want %v", r.Step, hasVal, wantVal)
		}
	}
	if want := []int{10, 20, 30, 40, 45}; !slices.Equal(steps, want) {
		t.Errorf("records at steps %v, want %v", steps, want)
	}
	if !reflect.DeepEqual(deterministic(rs), deterministic(l.History())) {
		t.Error("metrics log and History differ")
	}
	f, err := os.Open(filepath.Join(dir, PlotFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s is not a PNG: %v", PlotFile, err)
	}
	if b := img.Bounds(); b.Dx() < 100 || b.Dy() < 100 {
		t.Errorf("plot is %v", b)
	}
}

func TestPlainLogLines(t *testing.T) {
	var out bytes.Buffer
	l := newLoop(t, 30, "")
	l.Out = &out
	if _, err := l.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, s := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if strings.HasPrefix(s, "step ") {
			lines = append(lines, s)
		}
	}
	if len(lines) != 3 {
		t.Fatalf("got %d step lines, want 3:\n%s", len(lines), out.String())
	}
	for i, want := range []string{"step 10/30  loss ", "step 20/30  loss ", "step 30/30  loss "} {
		if !strings.HasPrefix(lines[i], want) {
			t.Errorf("line %q, want prefix %q", lines[i], want)
		}
	}
	for _, want := range []string{"val_loss ", "lr ", "grad_norm ", "samples/s"} {
		if !strings.Contains(lines[2], want) {
			t.Errorf("last line %q lacks %q", lines[2], want)
		}
	}
}

func TestProgressBar(t *testing.T) {
	var out bytes.Buffer
	l := newLoop(t, 30, t.TempDir())
	l.Out, l.forceBar, l.EvalEvery = &out, true, 10
	if _, err := l.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"30/30", "val_loss", "samples/s", "saved checkpoint"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("bar output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestNaNLossStops(t *testing.T) {
	dir := t.TempDir()
	l := newLoop(t, 50, dir)
	l.CheckpointEvery = 5
	l.Data.(*regressionData).nanAt = 8
	_, err := l.Run(context.Background())
	if !errors.Is(err, ErrDiverged) {
		t.Fatalf("Run: %v, want ErrDiverged", err)
	}
	for _, want := range []string{"step 8", "NaN", "step-000005"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if latest(t, dir) != "step-000005" {
		t.Errorf("LATEST = %q", latest(t, dir))
	}
}

func TestHookStopAndDataEOF(t *testing.T) {
	l := newLoop(t, 100, t.TempDir())
	var final Progress
	l.Hooks = []Hook{
		{Every: 7, Func: func(_ context.Context, p Progress) error { return ErrStop }},
		{Func: func(_ context.Context, p Progress) error { final = p; return nil }},
	}
	sum, err := l.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Step != 7 || !final.Done || final.Step != 7 || final.Eval == nil {
		t.Errorf("summary %+v, final progress %+v; want a stop after step 7 with a final evaluation", sum, final)
	}
	ck, err := LoadCheckpoint(l.Dir)
	if err != nil || ck.Step != 7 {
		t.Fatalf("checkpoint %v, %v", ck, err)
	}
}

func TestInvalidLoop(t *testing.T) {
	l := newLoop(t, 0, "")
	l.BestMode, l.Patience = "biggest", 2
	_, err := l.Run(context.Background())
	if err == nil {
		t.Fatal("Run accepted an invalid configuration")
	}
	for _, want := range []string{"Steps", "BestMode", "Patience"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestFreshRunRefusesUsedDir(t *testing.T) {
	dir, _ := savedRun(t)
	l := newLoop(t, 20, dir)
	_, err := l.Run(context.Background())
	wantErr(t, err, dir, "Resume")
	if ck := mustLoad(t, dir); ck.Step != 10 {
		t.Errorf("the existing run was changed: latest step %d", ck.Step)
	}
}

func TestRunAfterFinishedRunAddsNothing(t *testing.T) {
	dir, _ := savedRun(t)
	l := newLoop(t, 10, "")
	if err := l.Resume(dir); err != nil {
		t.Fatal(err)
	}
	before := readMetrics(t, dir)
	sum, err := l.Run(context.Background())
	if err != nil || sum.Step != 10 {
		t.Fatalf("Run: %+v, %v", sum, err)
	}
	if after := readMetrics(t, dir); !reflect.DeepEqual(before, after) {
		t.Errorf("metrics changed:\n%v\n%v", before, after)
	}
}

func TestInfiniteGradientStops(t *testing.T) {
	ps, err := autodiff.NewParams(autodiff.Float32, 1)
	if err != nil {
		t.Fatal(err)
	}
	w, err := ps.Root().New("w", []int{1}, autodiff.Zeros())
	if err != nil {
		t.Fatal(err)
	}
	// sqrt(w) at w = 0: the loss is 0, its gradient +Inf.
	m := autodiff.NewModel(ps, func(g *autodiff.Graph) (autodiff.Outputs, error) {
		return autodiff.Outputs{Loss: g.Sum(g.Sqrt(g.Param(w)))}, g.Err()
	}, 1)
	opt, err := optim.NewSGD(optim.All(ps.List()), optim.SGDConfig{LR: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	data := NewData(func() (Batch, error) { return Batch{}, nil }, func() int { return 0 }, func(int) error { return nil })
	l := &Loop{Model: m, Optimizer: opt, Data: data, Steps: 10}
	_, err = l.Run(context.Background())
	if !errors.Is(err, ErrDiverged) {
		t.Fatalf("Run: %v, want ErrDiverged", err)
	}
	wantErr(t, err, "step 1", "gradient norm is +Inf")
}

// TestShardedLoopMatchesWhole trains the same model (no dropout) 40 steps with every
// batch run whole and as 2 and 3 parts: the losses and final weights agree to float32
// round-off, and the parts really ran.
func TestShardedLoopMatchesWhole(t *testing.T) {
	run := func(shards int) ([]float64, *autodiff.Model) {
		m := newMLP(t, mlpConfig{Hidden: 16}, 1)
		if err := m.SetShards(shards); err != nil {
			t.Fatal(err)
		}
		opt, err := optim.NewAdam(optim.All(m.Params().List()), optim.AdamConfig{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8})
		if err != nil {
			t.Fatal(err)
		}
		var losses []float64
		l := &Loop{Model: m, Optimizer: opt, Data: newRegressionData(t, 64, 16), Steps: 40, LogEvery: 10, Hooks: []Hook{lossRecorder(&losses)}}
		if _, err := l.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		return losses, m
	}
	whole, mw := run(1)
	for _, shards := range []int{2, 3} {
		losses, m := run(shards)
		d := 0.0
		for i := range whole {
			d = max(d, math.Abs(losses[i]-whole[i])/max(1, math.Abs(whole[i])))
		}
		for _, p := range m.Params().List() {
			q := mw.Params().Get(p.Name())
			for i := range p.Size() {
				d = max(d, math.Abs(p.At(i)-q.At(i))/max(1, math.Abs(q.At(i))))
			}
		}
		t.Logf("%d shards: max relative difference %.2g over 40 steps' losses and the final weights", shards, d)
		if d > 1e-4 {
			t.Errorf("%d shards: max relative difference %.3g from whole batches, want ≤ 1e-4", shards, d)
		}
		x := tensor.New(tensor.WithShape(16, 1), tensor.WithBacking(make([]float32, 16)))
		res, err := m.Forward(map[string]*tensor.Dense{"x": x, "y": x.Clone().(*tensor.Dense)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Parts != shards {
			t.Errorf("SetShards(%d) ran %d parts", shards, res.Parts)
		}
	}
}
