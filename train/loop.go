package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/internal/regularfile"
	"github.com/locusml/locus/optim"
	"gorgonia.org/tensor"
)

// DefaultLogEvery is the logging interval of a Loop whose LogEvery is 0.
const DefaultLogEvery = 10

// MaxAccumulate bounds Loop.Accumulate: a step holds all its batches before it runs them,
// so a mistyped count would exhaust the memory before the first step.
const MaxAccumulate = 1 << 12

// Batch is one training batch: the model's named inputs and its size.
type Batch struct {
	// Inputs are passed to autodiff.Model.ForwardBackward.
	Inputs map[string]*tensor.Dense
	// Items is the number of samples or tokens in the batch, for the throughput; 0 if
	// not counted.
	Items int
}

// Data is an endless or finite source of training batches whose position can be saved
// in a checkpoint and restored exactly, so that a resumed run sees the batches an
// uninterrupted run would have seen.
type Data interface {
	// Next returns the next batch, or io.EOF when the data is exhausted, which ends
	// training normally.
	Next() (Batch, error)
	// State returns the position of the data as JSON.
	State() (json.RawMessage, error)
	// Restore moves the data to a position returned by State.
	Restore(state json.RawMessage) error
}

// Hook is a function the Loop calls during training: after every Every-th step (never,
// if Every is 0) and once more when training ends, with Progress.Done set.
type Hook struct {
	Every int
	Func  func(ctx context.Context, p Progress) error
}

// ErrStop, returned by a Hook, ends training normally after the current step.
var ErrStop = errors.New("train: stop requested")

// ErrDiverged is wrapped by the error Run returns when the training loss is NaN or
// infinite.
var ErrDiverged = errors.New("training diverged")

// Progress is what a Hook sees of the training.
type Progress struct {
	Step, Steps int     // steps completed and the target
	Loss        float64 // training loss of the last step
	LR          float64 // learning rate of the last step
	GradNorm    float64 // gradient norm of the last step, before clipping
	ItemsPerSec float64 // throughput since the last record
	Eval        Metrics // metrics of the latest evaluation, without ValPrefix; nil before any
	Evaluated   bool    // whether an evaluation ran at this step
	Done        bool    // set on the final call, when training has ended
	Elapsed     time.Duration
}

// Summary describes a finished Run.
type Summary struct {
	Step         int           // steps completed, counting those before a Resume
	Loss         float64       // training loss of the last step
	Eval         Metrics       // metrics of the last evaluation, without ValPrefix
	BestStep     int           // step of the best value of Loop.Best; 0 if none
	BestValue    float64       // the best value of Loop.Best
	StoppedEarly bool          // stopped by Patience
	Checkpoint   string        // the last checkpoint written, or ""
	Elapsed      time.Duration // wall time of the Run
	ItemsPerSec  float64       // training throughput over the Run
	Time         Phases        // where Elapsed went
}

// Phases splits a Run's wall time by what the Loop was doing.
type Phases struct {
	Data       time.Duration // Data.Next
	Steps      time.Duration // forward, backward and optimizer steps
	Eval       time.Duration // Eval
	Checkpoint time.Duration // checkpoints (snapshot, write, fsync, prune) and the plot
	Other      time.Duration // the rest: metrics log, progress output, hooks
}

// Loop trains a model: it draws batches from Data, runs the model forward and backward,
// steps the optimizer, evaluates, logs, plots and checkpoints. Fill in the fields and call
// Run; to continue an interrupted run, call Resume first. A zero field means the default
// its comment names (LogEvery, Accumulate, BestMode) or is off (EvalEvery,
// CheckpointEvery, Patience, Dir); Model, Optimizer, Data and Steps are required.
//
// Step numbers count completed steps from 1; a resumed Loop continues counting, so Steps
// is the total for the whole run, not for one call.
//
// Stopping and resuming gives bit-identical weights and losses to an uninterrupted run,
// provided Data.Restore and Eval are deterministic; the metrics log is identical too when
// the run stops at a step that is a multiple of LogEvery and EvalEvery, since the end of a
// Run always writes a record and evaluates.
//
// A Loop is not safe for concurrent use.
type Loop struct {
	Model     *autodiff.Model
	Optimizer optim.Optimizer // gradient clipping, if any, is the optimizer's MaxGradNorm
	Data      Data
	// Eval, if set, returns validation metrics computed with the current weights (for
	// instance with Model.Forward over a fixed validation set). They are recorded with
	// ValPrefix: "loss" becomes "val_loss"; a metric named with TrainPrefix, one measured
	// on the training data ("train_loss"), is recorded as it is.
	Eval func(ctx context.Context) (Metrics, error)
	// Observe, if set, returns measurements of the model itself, such as its learned
	// bandwidths ("bandwidth.blocks.0.attn.head1", ObserveBandwidths), recorded with every
	// evaluation under their own names: logged in MetricsFile and drawn in
	// BandwidthPlotFile, not printed.
	Observe func(ctx context.Context) (Metrics, error)

	Steps int // total number of steps (> 0), counting those before a Resume
	// Accumulate is the number of batches whose gradients make one step (gradient
	// accumulation, optim.Accumulator); the step's loss is their mean. 0 means 1; at
	// most MaxAccumulate, since a step holds its batches.
	Accumulate int

	EvalEvery       int // evaluate every EvalEvery steps; 0: only at the end
	LogEvery        int // record metrics every LogEvery steps; 0: DefaultLogEvery
	CheckpointEvery int // checkpoint every CheckpointEvery steps; 0: only at the end

	// Dir is the run directory: step checkpoints ("step-000200"), LatestFile, BestDir,
	// MetricsFile and PlotFile. Empty: nothing is written.
	Dir string
	// KeepLast is the number of step checkpoints kept (the best one is kept apart);
	// 0 keeps all.
	KeepLast int

	// Best names the metric that selects the best checkpoint, as recorded: "val_loss"
	// or "val_accuracy" for an Eval metric, or "loss" for the training loss. It is
	// compared at each evaluation. Empty: no best tracking.
	Best string
	// BestMode is "min" (the default) or "max".
	BestMode string
	// Patience stops training after that many evaluations without improvement of
	// Best; 0 never stops early. When Best is set, the model's parameters hold the best
	// weights when Run returns, however training ended, unless ctx was cancelled (then
	// they are the latest, those of the checkpoint Run saved); the last step checkpoint
	// keeps the latest weights, so that training can resume.
	Patience int

	// ItemsName names Batch.Items in the progress output, e.g. "tokens" or "samples";
	// empty: "items".
	ItemsName string
	// LossLabel names the training loss with its unit on the y axis of PlotFile, e.g.
	// "cross-entropy (nats per token)"; empty: "loss".
	LossLabel string
	// BandwidthLabel names the bandwidth with its unit on the y axis of
	// BandwidthPlotFile, e.g. "bandwidth h (score units)"; empty:
	// DefaultBandwidthLabel.
	BandwidthLabel string
	// Family names the model's family (RegisterFamily), saved with every checkpoint so
	// that Load can rebuild the model from ModelConfig.
	Family string
	// ModelConfig, DataConfig and TrainConfig (the run's training settings) are saved,
	// as JSON, with every checkpoint.
	ModelConfig, DataConfig, TrainConfig any
	// Hooks run after steps and at the end; see Hook.
	Hooks []Hook
	// Out receives progress: a one-line progress bar (schollz/progressbar) fitted to the
	// terminal's width (the step count and the time left always; the bar itself from 60
	// columns) when it is a terminal, else one line per record (every LogEvery steps and
	// at each evaluation). Nil: no output.
	Out io.Writer
	// OnStart, if set, is called by Run once it holds Dir's lock (LockFile), before the
	// first step: the place for the caller's own files in the run directory, so that a
	// run refused as concurrent writes none.
	OnStart func() error
	// Reducer, if set with more than one process, makes this Loop one process of a
	// data-parallel run (see Reducer; Data must be a Splitter): parameters are broadcast
	// from rank 0 when Run starts, gradients averaged at every step, the parameter
	// checksums compared every LogEvery steps, and only rank 0 writes Dir and Out. Every
	// process evaluates (Eval sees the same weights everywhere) and calls the Hooks,
	// which must decide the same way on every process. Nil: one process.
	Reducer Reducer

	step           int
	history        []Record
	state          LoopState
	bestParams     map[string]*tensor.Dense
	lastEval       Metrics
	lastEvalStep   int
	lastSavedStep  int
	lastCheckpoint string
	modelConfig    json.RawMessage
	dataConfig     json.RawMessage
	trainConfig    json.RawMessage
	out            printer
	forceBar       bool // tests: draw the bar even when Out is not a terminal
	resumed        bool
	resumedLatest  string // LatestFile's content in Dir when Resume read the checkpoint

	// Throughput and last-step values; not saved.
	windowItems int
	windowTime  time.Duration
	totalItems  int
	totalTime   time.Duration
	lastLoss    float64
	lastLR      float64
	lastNorm    float64
	acc         *optim.Accumulator
	phases      Phases
	stopAll     bool // a process of a data-parallel run was cancelled
}

// Step returns the number of steps completed, counting those restored by Resume.
func (l *Loop) Step() int { return l.step }

// History returns the metrics recorded so far, in step order.
func (l *Loop) History() []Record { return slices.Clone(l.history) }

func (l *Loop) logEvery() int {
	if l.LogEvery > 0 {
		return l.LogEvery
	}
	return DefaultLogEvery
}

func (l *Loop) itemsName() string {
	if l.ItemsName != "" {
		return l.ItemsName
	}
	return "items"
}

// validate checks the configuration before a Run or Resume.
func (l *Loop) validate() error {
	var errs []error
	if l.Model == nil {
		errs = append(errs, errors.New("Loop.Model is nil"))
	}
	if l.Optimizer == nil {
		errs = append(errs, errors.New("Loop.Optimizer is nil"))
	}
	if l.Data == nil {
		errs = append(errs, errors.New("Loop.Data is nil"))
	}
	if l.Steps <= 0 {
		errs = append(errs, fmt.Errorf("Loop.Steps is %d, want > 0", l.Steps))
	}
	if l.Accumulate > MaxAccumulate {
		errs = append(errs, fmt.Errorf("Loop.Accumulate is %d, want at most %d", l.Accumulate, MaxAccumulate))
	}
	for name, v := range map[string]int{"EvalEvery": l.EvalEvery, "LogEvery": l.LogEvery,
		"CheckpointEvery": l.CheckpointEvery, "KeepLast": l.KeepLast, "Patience": l.Patience, "Accumulate": l.Accumulate} {
		if v < 0 {
			errs = append(errs, fmt.Errorf("%s is %d, want >= 0", name, v))
		}
	}
	switch l.BestMode {
	case "", "min", "max":
	default:
		errs = append(errs, fmt.Errorf("BestMode is %q, want \"min\" or \"max\"", l.BestMode))
	}
	if l.Best != "" && l.Eval == nil {
		errs = append(errs, fmt.Errorf("Loop.Best is %q but Eval is nil: the best metric is compared at evaluations", l.Best))
	}
	if l.Patience > 0 && l.Best == "" {
		errs = append(errs, errors.New("Loop.Patience is set but Best is empty"))
	}
	for i, h := range l.Hooks {
		if h.Func == nil {
			errs = append(errs, fmt.Errorf("Hooks[%d].Func is nil", i))
		}
		if h.Every < 0 {
			errs = append(errs, fmt.Errorf("Hooks[%d].Every is %d, want >= 0", i, h.Every))
		}
	}
	if _, ok := l.Data.(Splitter); l.parallel() && !ok {
		errs = append(errs, fmt.Errorf("Loop.Data (%T) is not a Splitter, so it cannot be split across %d processes", l.Data, l.Reducer.Size()))
	}
	if l.Model != nil && l.Optimizer != nil {
		ps := l.Model.Params()
		for _, p := range l.Optimizer.Params() {
			if ps.Get(p.Name()) != p {
				errs = append(errs, fmt.Errorf("the optimizer's parameter %q is not the model's", p.Name()))
				break
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("train: invalid loop: %w", err)
	}
	return nil
}

func (l *Loop) bestMode() string {
	if l.BestMode == "" {
		return "min"
	}
	return l.BestMode
}

// Run trains until Steps steps are completed, the data runs out (io.EOF), a Hook
// returns ErrStop or Patience runs out. It then evaluates (if the last step was not
// evaluated), checkpoints, plots and calls the hooks a last time.
//
// When ctx is cancelled, Run saves a checkpoint and returns an error that names it and
// wraps ctx.Err(), so errors.Is(err, context.Canceled) holds. A NaN or infinite loss
// stops training with an error wrapping ErrDiverged that names the step, without a
// checkpoint. The Summary is returned with the error when training started.
//
// Run holds the lock of Dir (LockFile) while it runs: a second Loop or process training
// in the same Dir gets an error wrapping ErrRunInUse that names the holder's pid, and a
// lock left by a killed process is taken over. Dir must be new, empty or a run
// directory (see RunFile): another folder that holds files is refused with an error
// wrapping ErrNotRunDir. A Loop that was not resumed refuses to
// start in a Dir that already holds a run (a LatestFile), and a resumed one refuses if
// another run moved LatestFile since Resume, rather than mixing two runs' checkpoints
// and logs.
func (l *Loop) Run(ctx context.Context) (*Summary, error) {
	if err := l.validate(); err != nil {
		return nil, err
	}
	if l.step > l.Steps {
		return nil, fmt.Errorf("train: the run was resumed at step %d, beyond Steps %d: Steps counts from the start of the run, so nothing is left to train (ask for more than %d steps)", l.step, l.Steps, l.step)
	}
	var err error
	if l.modelConfig, err = marshalConfig("ModelConfig", l.ModelConfig); err != nil {
		return nil, err
	}
	if l.trainConfig, err = marshalConfig("TrainConfig", l.TrainConfig); err != nil {
		return nil, err
	}
	if l.dataConfig, err = marshalConfig("DataConfig", l.DataConfig); err != nil {
		return nil, err
	}
	if err := l.startParallel(); err != nil {
		return nil, err
	}
	if !l.root() {
		dir, out := l.Dir, l.Out
		l.Dir, l.Out = "", nil
		defer func() { l.Dir, l.Out = dir, out }()
	}
	if l.state.BestMetric != l.Best || (l.Best != "" && l.state.BestMode != l.bestMode()) {
		l.state.BestMetric, l.state.BestMode = l.Best, l.bestMode()
		l.state.BestStep, l.state.BestValue, l.state.EvalsSinceBest = 0, 0, 0
		l.bestParams = nil
	}
	if l.lastSavedStep == 0 && l.lastCheckpoint == "" {
		l.lastSavedStep = -1
	}
	l.lastEvalStep = -1
	for i := len(l.history) - 1; i >= 0; i-- {
		if valMetrics(l.history[i].Metrics) != nil {
			l.lastEvalStep = l.history[i].Step
			break
		}
	}
	if l.Dir != "" {
		if err := checkRunDir(l.Dir); err != nil {
			return nil, err
		}
		lock, err := lockRunDir(l.Dir)
		if err != nil {
			return nil, err
		}
		defer lock.unlock()
		// Under the lock, so that of two runs started together exactly one trains.
		latest := readLatest(l.Dir)
		if l.step == 0 && l.lastCheckpoint == "" && latest != "" {
			return nil, fmt.Errorf("train: %s already holds a run (it has a %s file): call Resume to continue it, or choose another Dir", l.Dir, LatestFile)
		}
		if l.resumed && latest != l.resumedLatest {
			return nil, fmt.Errorf("train: %s: %s moved from %q to %q since Resume read it (another process trained there): resume again", l.Dir, LatestFile, l.resumedLatest, latest)
		}
		if err := cleanStale(l.Dir); err != nil {
			return nil, fmt.Errorf("train: clean %s: %w", l.Dir, err)
		}
		if err := markRunDir(l.Dir); err != nil {
			return nil, err
		}
		if l.OnStart != nil {
			if err := l.OnStart(); err != nil {
				return nil, err
			}
		}
		// The log restarts from the history, dropping lines written after the checkpoint
		// a resumed run starts from.
		if err := writeFileAtomic(filepath.Join(l.Dir, MetricsFile), func(w io.Writer) error {
			return writeRecords(w, l.history)
		}); err != nil {
			return nil, fmt.Errorf("train: %w", err)
		}
	}
	if l.acc, err = optim.NewAccumulator(l.Optimizer, max(l.Accumulate, 1)); err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	start := time.Now()
	l.out = newPrinter(l)
	defer l.out.close()
	sum := &Summary{}
	l.totalItems, l.totalTime = 0, 0
	l.phases = Phases{}

	for l.step < l.Steps {
		if err := ctx.Err(); err != nil && !l.parallel() {
			return l.interrupted(sum, start, err)
		}
		t0 := time.Now()
		items, err := l.trainStep(ctx.Err() != nil)
		if errors.Is(err, io.EOF) {
			l.out.message(fmt.Sprintf("data exhausted after step %d", l.step))
			break
		}
		if err != nil {
			return l.failed(sum, start, err)
		}
		if l.stopAll {
			return l.interrupted(sum, start, context.Canceled)
		}
		dt := time.Since(t0)
		l.phases.Steps += dt // trainStep moves its Data.Next time to Data
		l.windowItems += items
		l.windowTime += dt
		l.totalItems += items
		l.totalTime += dt

		evalNow := l.Eval != nil && ((l.EvalEvery > 0 && l.step%l.EvalEvery == 0) || l.step == l.Steps)
		recordNow := evalNow || l.step%l.logEvery() == 0 || l.step == l.Steps
		if err := l.observe(ctx, evalNow, recordNow); err != nil {
			if ctx.Err() != nil {
				return l.interrupted(sum, start, ctx.Err())
			}
			return l.failed(sum, start, err)
		}
		if l.Dir != "" && l.CheckpointEvery > 0 && l.step%l.CheckpointEvery == 0 {
			if err := l.checkpoint(); err != nil {
				return l.failed(sum, start, err)
			}
		}
		stop, err := l.runHooks(ctx, start, evalNow, false)
		if err != nil {
			return l.failed(sum, start, err)
		}
		l.out.step(l.progress(start, evalNow, false))
		if l.Patience > 0 && l.state.EvalsSinceBest >= l.Patience {
			sum.StoppedEarly = true
			l.out.message(fmt.Sprintf("early stopping at step %d: %s has not improved for %d evaluations (best %s at step %d)",
				l.step, l.Best, l.Patience, formatValue(l.state.BestValue), l.state.BestStep))
			break
		}
		if stop {
			break
		}
	}
	return l.finish(ctx, sum, start)
}

// trainStep runs one optimisation step over Accumulate batches and returns the number
// of items they held. It returns io.EOF, having changed nothing, when the data runs out
// before the step's batches are complete. stop asks the processes of a data-parallel run
// to stop after this step.
func (l *Loop) trainStep(stop bool) (int, error) {
	step := l.step + 1
	k := l.acc.MicroBatches()
	batches := make([]Batch, k)
	for i := range batches {
		t0 := time.Now()
		b, err := l.Data.Next()
		d := time.Since(t0)
		l.phases.Data += d
		l.phases.Steps -= d
		if errors.Is(err, io.EOF) {
			return 0, err
		}
		if err != nil {
			return 0, fmt.Errorf("train: step %d: next batch: %w", step, err)
		}
		batches[i] = b
	}
	ps := l.Model.Params()
	ps.ZeroGrad()
	lr := l.Optimizer.LR()
	loss, items := 0.0, 0
	for _, b := range batches {
		// In a data-parallel run the gradients are averaged over the processes after
		// each batch: the sum of the earlier batches' is already the same everywhere.
		bl, err := l.lossAndGrads(b, stop)
		if err != nil {
			return 0, fmt.Errorf("train: step %d: %w", step, err)
		}
		if math.IsNaN(bl) || math.IsInf(bl, 0) {
			where := "no checkpoint was saved"
			if l.lastCheckpoint != "" {
				where = "the last checkpoint is " + l.lastCheckpoint
			}
			return 0, fmt.Errorf("train: step %d: loss is %v; stopping (%s): %w", step, bl, where, ErrDiverged)
		}
		loss += bl
		items += b.Items
		if _, err := l.acc.Step(); err != nil {
			if n := optim.GradNorm(l.Optimizer.Params()); math.IsNaN(n) || math.IsInf(n, 0) {
				return 0, fmt.Errorf("train: step %d: gradient norm is %v (loss %v); stopping: %w", step, n, bl, ErrDiverged)
			}
			return 0, fmt.Errorf("train: step %d: %w", step, err)
		}
	}
	loss /= float64(k)
	l.step = step
	l.lastLoss, l.lastLR, l.lastNorm = loss, lr, l.Optimizer.GradNorm()
	l.state.WindowLoss += loss
	l.state.WindowSteps++
	return items, l.checkInSync()
}

// observe evaluates and records metrics after a step, and tracks the best metric.
func (l *Loop) observe(ctx context.Context, evalNow, recordNow bool) error {
	var val Metrics
	if evalNow {
		t0 := time.Now()
		m, err := l.Eval(ctx)
		l.phases.Eval += time.Since(t0)
		if err != nil {
			return fmt.Errorf("train: step %d: evaluate: %w", l.step, err)
		}
		val = m
		l.lastEval, l.lastEvalStep = cloneMetrics(m), l.step
	}
	var obs Metrics
	if evalNow && recordNow && l.Observe != nil {
		m, err := l.Observe(ctx)
		if err != nil {
			return fmt.Errorf("train: step %d: observe: %w", l.step, err)
		}
		obs = m
	}
	if !recordNow {
		return nil
	}
	r := Record{Step: l.step, Metrics: Metrics{}}
	if l.state.WindowSteps > 0 {
		r.Metrics[MetricLoss] = l.state.WindowLoss / float64(l.state.WindowSteps)
		r.Metrics[MetricLR] = l.lastLR
		r.Metrics[MetricGradNorm] = l.lastNorm
		if secs := l.windowTime.Seconds(); secs > 0 {
			r.Metrics[MetricStepsPerS] = float64(l.state.WindowSteps) / secs
			if l.windowItems > 0 {
				r.Metrics[MetricItemsPerS] = float64(l.windowItems) / secs
			}
		}
	}
	for k, v := range val {
		if strings.HasPrefix(k, TrainPrefix) {
			r.Metrics[k] = v
		} else {
			r.Metrics[ValPrefix+k] = v
		}
	}
	for k, v := range obs {
		r.Metrics[k] = v
	}
	l.state.WindowLoss, l.state.WindowSteps = 0, 0
	l.windowItems, l.windowTime = 0, 0
	l.history = append(l.history, r)
	if l.Dir != "" {
		if err := appendRecord(filepath.Join(l.Dir, MetricsFile), r); err != nil {
			return fmt.Errorf("train: %w", err)
		}
	}
	l.out.record(r)
	if evalNow && l.Best != "" {
		return l.trackBest(r)
	}
	return nil
}

// cloneMetrics returns a copy of m, never nil.
func cloneMetrics(m Metrics) Metrics {
	if m == nil {
		return Metrics{}
	}
	return maps.Clone(m)
}

func appendRecord(path string, r Record) error {
	f, err := regularfile.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	b, err := json.Marshal(r)
	if err == nil {
		_, err = f.Write(append(b, '\n'))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// trackBest compares the record's Best metric with the best so far, and on improvement
// keeps a copy of the weights and saves the best checkpoint.
func (l *Loop) trackBest(r Record) error {
	v, ok := r.Metrics[l.Best]
	if !ok {
		return fmt.Errorf("train: step %d: best metric %q is not among the recorded metrics %v", l.step, l.Best, slices.Sorted(maps.Keys(r.Metrics)))
	}
	better := l.state.BestStep == 0
	if !math.IsNaN(v) && !better {
		if l.bestMode() == "max" {
			better = v > l.state.BestValue
		} else {
			better = v < l.state.BestValue
		}
	}
	if math.IsNaN(v) {
		better = false
	}
	if !better {
		l.state.EvalsSinceBest++
		return nil
	}
	l.state.BestStep, l.state.BestValue, l.state.EvalsSinceBest = l.step, v, 0
	l.bestParams = cloneParams(l.Model.Params(), l.bestParams)
	if l.Dir == "" {
		return nil
	}
	ck, err := l.snapshot()
	if err != nil {
		return err
	}
	dir := filepath.Join(l.Dir, BestDir)
	if err := SaveCheckpoint(dir, ck); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	return nil
}

// cloneParams copies the parameter values into dst (allocated when nil).
func cloneParams(ps *autodiff.Params, dst map[string]*tensor.Dense) map[string]*tensor.Dense {
	if dst == nil {
		dst = make(map[string]*tensor.Dense, ps.Len())
	}
	for _, p := range ps.List() {
		if t, ok := dst[p.Name()]; ok && t.Shape().Eq(p.Value().Shape()) && t.Dtype() == p.Dtype() {
			tensor.Copy(t, p.Value())
			continue
		}
		dst[p.Name()] = p.Value().Clone().(*tensor.Dense)
	}
	return dst
}

// snapshot gathers a checkpoint of the current state. The parameter tensors are the
// live ones: save it before the next step.
func (l *Loop) snapshot() (*Checkpoint, error) {
	rng, err := l.Model.RNGState()
	if err != nil {
		return nil, fmt.Errorf("train: model RNG state: %w", err)
	}
	ds, err := l.Data.State()
	if err != nil {
		return nil, fmt.Errorf("train: data state: %w", err)
	}
	return &Checkpoint{
		Step:        l.step,
		Params:      ParamTensors(l.Model.Params()),
		Optimizer:   l.Optimizer.State(),
		Family:      l.Family,
		ModelConfig: l.modelConfig,
		DataConfig:  l.dataConfig,
		TrainConfig: l.trainConfig,
		RNG:         rng,
		DataState:   ds,
		History:     l.stepRecords(),
		Loop:        l.state,
	}, nil
}

// stepRecords returns the records of the current step: a checkpoint holds the metrics of
// its own step, the history stays in MetricsFile.
func (l *Loop) stepRecords() []Record {
	i := len(l.history)
	for i > 0 && l.history[i-1].Step == l.step {
		i--
	}
	return slices.Clone(l.history[i:])
}

// readHistory returns the records of the metrics log in dir up to step, in file order.
func readHistory(dir string, step int) ([]Record, error) {
	all, err := readRecords(dir)
	var out []Record
	for _, r := range all {
		if r.Step <= step {
			out = append(out, r)
		}
	}
	return out, err
}

// readLatest returns the content of dir's LatestFile, or "" if it has none.
func readLatest(dir string) string {
	b, err := regularfile.ReadFile(filepath.Join(dir, LatestFile), maxLatestBytes)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// stepDirName is the name of the checkpoint of a step.
func stepDirName(step int) string { return fmt.Sprintf("step-%06d", step) }

// parseStepDir returns the step of a checkpoint directory name, or false.
func parseStepDir(name string) (int, bool) {
	s, ok := strings.CutPrefix(name, "step-")
	if !ok || s == "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// checkpoint saves a step checkpoint, points LatestFile at it, prunes old ones and
// redraws the plot.
func (l *Loop) checkpoint() error {
	if l.lastSavedStep == l.step {
		return nil
	}
	defer func(t0 time.Time) { l.phases.Checkpoint += time.Since(t0) }(time.Now())
	ck, err := l.snapshot()
	if err != nil {
		return err
	}
	// A NaN in the weights with a finite loss (an optimizer state gone bad) must not
	// reach a checkpoint that LATEST points at.
	for _, ts := range []map[string]*tensor.Dense{ck.Params, ck.Optimizer} {
		if err := checkFinite(ts); err != nil {
			where := "no checkpoint was saved"
			if l.lastCheckpoint != "" {
				where = "the last checkpoint is " + l.lastCheckpoint
			}
			return fmt.Errorf("train: step %d: %v; stopping without saving (%s): %w", l.step, err, where, ErrDiverged)
		}
	}
	name := stepDirName(l.step)
	dir := filepath.Join(l.Dir, name)
	if err := SaveCheckpoint(dir, ck); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(l.Dir, LatestFile), func(w io.Writer) error {
		_, err := io.WriteString(w, name+"\n")
		return err
	}); err != nil {
		return fmt.Errorf("train: update %s: %w", LatestFile, err)
	}
	l.lastSavedStep, l.lastCheckpoint = l.step, dir
	l.out.message("saved checkpoint " + dir)
	if err := l.prune(); err != nil {
		return fmt.Errorf("train: prune checkpoints: %w", err)
	}
	return l.plot()
}

// prune removes all but the KeepLast latest step checkpoints up to the current step.
// Checkpoints of later steps, left by a run that was resumed from an earlier one, are
// not touched.
func (l *Loop) prune() error {
	if l.KeepLast <= 0 {
		return nil
	}
	entries, err := os.ReadDir(l.Dir)
	if err != nil {
		return err
	}
	var steps []int
	for _, e := range entries {
		if n, ok := parseStepDir(e.Name()); ok && e.IsDir() && n <= l.step {
			steps = append(steps, n)
		}
	}
	sort.Ints(steps)
	var errs []error
	for _, n := range steps[:max(0, len(steps)-l.KeepLast)] {
		if n == l.lastSavedStep {
			continue
		}
		errs = append(errs, removeDir(filepath.Join(l.Dir, stepDirName(n))))
	}
	return errors.Join(errs...)
}

// runHooks calls the hooks due at this step (all of them when done). It reports
// whether one asked to stop.
func (l *Loop) runHooks(ctx context.Context, start time.Time, evaluated, done bool) (bool, error) {
	stop := false
	for i, h := range l.Hooks {
		if !done && (h.Every <= 0 || l.step%h.Every != 0) {
			continue
		}
		err := h.Func(ctx, l.progress(start, evaluated, done))
		if errors.Is(err, ErrStop) {
			stop = true
			continue
		}
		if err != nil {
			return stop, fmt.Errorf("train: step %d: hook %d: %w", l.step, i, err)
		}
	}
	return stop, nil
}

func (l *Loop) progress(start time.Time, evaluated, done bool) Progress {
	p := Progress{
		Step: l.step, Steps: l.Steps,
		Loss: l.lastLoss, LR: l.lastLR, GradNorm: l.lastNorm,
		Eval: l.lastEval, Evaluated: evaluated, Done: done,
		Elapsed: time.Since(start),
	}
	if secs := l.windowTime.Seconds(); secs > 0 && l.windowItems > 0 {
		p.ItemsPerSec = float64(l.windowItems) / secs
	} else if secs := l.totalTime.Seconds(); secs > 0 {
		p.ItemsPerSec = float64(l.totalItems) / secs
	}
	return p
}

// finish ends a Run normally: final evaluation and record, checkpoint, plot, hooks, best
// weights.
func (l *Loop) finish(ctx context.Context, sum *Summary, start time.Time) (*Summary, error) {
	evalNow := l.Eval != nil && l.lastEvalStep != l.step && l.step > 0
	if evalNow || l.state.WindowSteps > 0 {
		if err := l.observe(ctx, evalNow, true); err != nil {
			if ctx.Err() != nil {
				return l.interrupted(sum, start, ctx.Err())
			}
			return l.failed(sum, start, err)
		}
	}
	if l.Dir != "" {
		if err := l.checkpoint(); err != nil {
			return l.failed(sum, start, err)
		}
		t0 := time.Now()
		if err := l.plot(); err != nil {
			return l.failed(sum, start, err)
		}
		l.phases.Checkpoint += time.Since(t0)
	}
	if _, err := l.runHooks(ctx, start, evalNow, true); err != nil {
		return l.failed(sum, start, err)
	}
	l.out.done(l.progress(start, evalNow, true))
	l.summarize(sum, start)
	l.restoreBest()
	return sum, nil
}

// interrupted saves a checkpoint after a cancellation and returns the error to report
// (it is the only report: nothing is printed). The parameters keep the latest weights,
// those of the checkpoint.
func (l *Loop) interrupted(sum *Summary, start time.Time, cause error) (*Summary, error) {
	if l.Dir == "" {
		l.summarize(sum, start)
		return sum, fmt.Errorf("train: interrupted after step %d; no checkpoint saved (Dir is empty): %w", l.step, cause)
	}
	if err := l.checkpoint(); err != nil {
		l.summarize(sum, start)
		return sum, fmt.Errorf("train: interrupted after step %d; saving a checkpoint failed: %v: %w", l.step, err, cause)
	}
	l.summarize(sum, start)
	return sum, fmt.Errorf("train: interrupted after step %d; checkpoint saved in %s (resume from %s): %w",
		l.step, l.lastCheckpoint, l.Dir, cause)
}

// failed ends a Run on an error: the best weights are restored and the error returned.
func (l *Loop) failed(sum *Summary, start time.Time, err error) (*Summary, error) {
	l.summarize(sum, start)
	l.restoreBest()
	return sum, err
}

// summarize fills in the summary.
func (l *Loop) summarize(sum *Summary, start time.Time) *Summary {
	sum.Step, sum.Loss, sum.Eval = l.step, l.lastLoss, l.lastEval
	sum.BestStep, sum.BestValue = l.state.BestStep, l.state.BestValue
	sum.Checkpoint = l.lastCheckpoint
	sum.Elapsed = time.Since(start)
	sum.Time = l.phases
	sum.Time.Other = sum.Elapsed - l.phases.Data - l.phases.Steps - l.phases.Eval - l.phases.Checkpoint
	if secs := l.totalTime.Seconds(); secs > 0 {
		sum.ItemsPerSec = float64(l.totalItems) / secs
	}
	return sum
}

// restoreBest puts the best weights back into the model's parameters.
func (l *Loop) restoreBest() {
	if l.Best != "" && l.bestParams != nil && l.state.BestStep != l.step {
		for _, p := range l.Model.Params().List() {
			if t, ok := l.bestParams[p.Name()]; ok {
				p.Set(t) // shapes were checked when the copy was taken or loaded
			}
		}
		l.out.message(fmt.Sprintf("restored the best weights (%s %s at step %d)", l.Best, formatValue(l.state.BestValue), l.state.BestStep))
	}
}

// Resume restores the state saved in a checkpoint: parameters, optimizer, step, model
// RNG, data position, metrics history (from the run directory's MetricsFile) and
// best-metric tracking, so that Run continues
// exactly where the checkpointed run was. path is a run directory (its latest
// checkpoint is used) or a checkpoint directory. The Loop's Model, Optimizer and Data
// must be built as for the saved run. If Dir is empty it becomes the run directory of
// the checkpoint. On error the model may be partly restored and should not be trained.
func (l *Loop) Resume(path string) error {
	if l.Model == nil || l.Optimizer == nil || l.Data == nil {
		return errors.New("train: resume: Model, Optimizer and Data must be set")
	}
	ck, err := LoadCheckpoint(path)
	if err != nil {
		return fmt.Errorf("train: resume: %w", err)
	}
	if err := ck.ApplyParams(l.Model.Params()); err != nil {
		return fmt.Errorf("train: resume: %w", err)
	}
	if err := ck.ApplyOptimizer(l.Optimizer); err != nil {
		return fmt.Errorf("train: resume: %w", err)
	}
	if len(ck.RNG) > 0 {
		if err := l.Model.SetRNGState(ck.RNG); err != nil {
			return fmt.Errorf("train: resume %s: model RNG state: %w", ck.Dir, err)
		}
	}
	if len(ck.DataState) > 0 {
		if err := l.Data.Restore(ck.DataState); err != nil {
			return fmt.Errorf("train: resume %s: data state: %w", ck.Dir, err)
		}
	}
	l.step = ck.Step
	// The history is the run's metrics log up to the checkpoint; a checkpoint away from
	// its run directory (or one written when checkpoints held the whole history) has
	// its own records.
	l.history = slices.Clone(ck.History)
	if h, err := readHistory(filepath.Dir(ck.Dir), ck.Step); err == nil && len(h) >= len(ck.History) {
		l.history = h
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("train: resume: %w", err)
	}
	l.state = ck.Loop
	l.lastSavedStep, l.lastCheckpoint = ck.Step, ck.Dir
	l.lastEval = nil
	for i := len(l.history) - 1; i >= 0; i-- {
		if m := valMetrics(l.history[i].Metrics); m != nil {
			l.lastEval = m
			break
		}
	}
	if l.Dir == "" {
		l.Dir = filepath.Dir(ck.Dir)
	}
	l.resumed, l.resumedLatest = true, readLatest(l.Dir)
	l.bestParams = nil
	if l.state.BestStep > 0 {
		if err := l.loadBest(); err != nil {
			return fmt.Errorf("train: resume: %w", err)
		}
	}
	return nil
}

// loadBest reads the weights of the best checkpoint, if it is the one the state names.
func (l *Loop) loadBest() error {
	dir := filepath.Join(l.Dir, BestDir)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) && findOld(dir) == "" {
		return nil
	}
	best, err := LoadCheckpoint(dir)
	if err != nil {
		return err
	}
	if best.Step != l.state.BestStep {
		return nil
	}
	for _, p := range l.Model.Params().List() {
		t, ok := best.Params[p.Name()]
		if !ok || !t.Shape().Eq(p.Value().Shape()) {
			return fmt.Errorf("load checkpoint %s: tensor %q is missing or has the wrong shape", best.file(ModelFile), p.Name())
		}
	}
	l.bestParams = best.Params
	return nil
}

// valMetrics returns the evaluation metrics of a record as Eval returned them: those
// that carry ValPrefix, without it, and, if there are any, those named with TrainPrefix.
func valMetrics(m Metrics) Metrics {
	var out Metrics
	for k, v := range m {
		if name, ok := strings.CutPrefix(k, ValPrefix); ok {
			if out == nil {
				out = Metrics{}
			}
			out[name] = v
		}
	}
	for k, v := range m {
		if out != nil && strings.HasPrefix(k, TrainPrefix) {
			out[k] = v
		}
	}
	return out
}

func marshalConfig(field string, v any) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("train: %s: %w", field, err)
	}
	return b, nil
}

// NewData makes a Data from functions, with the position as any JSON-encodable value:
// for a datasets.Stream s,
//
//	data := train.NewData(func() (train.Batch, error) { return toBatch(s.Next()) }, s.State, s.Restore)
func NewData[S any](next func() (Batch, error), state func() S, restore func(S) error) Data {
	return funcData[S]{next, state, restore}
}

type funcData[S any] struct {
	next    func() (Batch, error)
	state   func() S
	restore func(S) error
}

func (d funcData[S]) Next() (Batch, error) { return d.next() }

func (d funcData[S]) State() (json.RawMessage, error) { return json.Marshal(d.state()) }

func (d funcData[S]) Restore(b json.RawMessage) error {
	var s S
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	return d.restore(s)
}
