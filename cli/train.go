package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/dist"
	"github.com/locusml/locus/internal/quote"
	"github.com/locusml/locus/layers"
	"github.com/locusml/locus/models/transformer"
	"github.com/locusml/locus/train"
)

func init() {
	register("train", "train a model (default: a Transformer on the reverse task)", runTrain)
}

// trainFlags are the values of locus train's flags.
type trainFlags struct {
	ModelFlags
	settings            trainSettings
	out, resume, config string
	checkOnly           bool // checkTrainArgs: stop once the configurations are built
}

// ModelFlags are the values of locus train's model and data flags, which a Family turns
// into its model and data configurations (Family.Configs) and reads back from saved ones
// (Family.ToFlags). They are fixed for a run: on -resume a different value is an error.
// Each field is the flag of the same name; the defaults are those of `locus train -h`.
type ModelFlags struct {
	Model                                 string // -model: a value of some Family's Kinds
	Task, CorruptMode, Data, Noise, MNIST string
	Arch                                  transformer.Arch
	Kernel                                layers.KernelSpec
	Bandwidth                             layers.BandwidthMode
	Positions                             layers.PositionEncoding
	Activation                            layers.Activation
	Init                                  layers.Init
	Layers, DModel, Heads, DFF, SeqLen    int
	RandomFeatures                        int
	Batch                                 int
	PostLN, Tie, Bias                     bool
	Dropout, CorruptRate, Sigma           float64
	MaxBytes                              int64
	ValFraction                           float64
	Seed                                  uint64

	set map[string]bool // the flags given on the command line
}

// Given reports whether the flag name (without its dash) was given on the command line
// or, on -resume and with -config, holds a saved run's value.
func (f *ModelFlags) Given(name string) bool { return f.set[name] }

// modelFlags are the flags of the model and its data.
var modelFlags = []string{"model", "task", "arch", "kernel", "bandwidth", "positions", "layers", "dmodel", "heads", "dff", "postln", "tie", "bias", "activation", "init", "dropout", "random-features", "seqlen", "corrupt-rate", "corrupt-mode", "data", "maxbytes", "val-fraction", "batch", "seed", "noise", "sigma", "mnist"}

// defineTrainFlags binds locus train's flags to f's fields.
func defineTrainFlags(fs *flag.FlagSet, f *trainFlags) {
	fs.StringVar(&f.Task, "task", "reverse", "toy task ("+strings.Join(datasets.TaskNames(), ", ")+"), charlm, or mnist (with -model dae or ldae)")
	fs.StringVar(&f.Model, "model", "transformer", "model, a kind of a registered family: "+strings.Join(modelKinds(), ", ")+" (dae: the MLP denoising autoencoder; ldae: the localized DAE)")
	fs.TextVar(&f.Arch, "arch", transformer.ArchEncoder, "encoder, lm or encdec (default: encoder for toy tasks, lm for charlm)")
	fs.TextVar(&f.Kernel, "kernel", layers.KernelSpec{Kernel: layers.Exponential{}}, "attention kernel spec (transformer, ldae), e.g. 'gaussian * window(8)' or 'mixture(exponential, laplacian)'; forms: "+strings.Join(layers.KernelNames(), ", "))
	fs.TextVar(&f.Bandwidth, "bandwidth", layers.BandwidthFixed, "bandwidth mode: "+strings.Join(layers.BandwidthModeNames(), ", "))
	fs.TextVar(&f.Positions, "positions", layers.PositionsLearned, "positions: "+strings.Join(layers.PositionEncodingNames(), ", ")+" (none: position information only from the kernel, e.g. -kernel 'exponential * distance(0.5)', and causality)")
	fs.IntVar(&f.Layers, "layers", 2, "number of blocks")
	fs.IntVar(&f.DModel, "dmodel", 64, "model width")
	fs.IntVar(&f.Heads, "heads", 4, "attention heads")
	fs.IntVar(&f.DFF, "dff", 0, "feed-forward width (0: 4·-dmodel, 256 at -dmodel 64)")
	fs.BoolVar(&f.PostLN, "postln", false, "post-LN blocks instead of pre-LN")
	fs.BoolVar(&f.Tie, "tie", false, "transformer: tie the output head to the token embedding (the head reuses tok_emb.weight)")
	fs.BoolVar(&f.Bias, "bias", true, "transformer: biases in the Linear maps and LayerNorms (-bias=false: weights only, GPT-2's bias=False)")
	fs.TextVar(&f.Activation, "activation", layers.GELUTanh, "transformer: feed-forward activation: "+strings.Join(layers.ActivationNames(), ", ")+" (gelu is the exact erf form, PyTorch's nn.GELU)")
	fs.TextVar(&f.Init, "init", layers.InitGPT, "transformer: initialisation: "+strings.Join(layers.InitNames(), ", ")+" (gpt: N(0, 0.02²) weights; gpt2: gpt with each block's attention output map and second feed-forward map at 0.02/√(2·layers))")
	fs.Float64Var(&f.Dropout, "dropout", 0, "dropout probability (transformer: on the embedding sum, the attention weights and each residual branch's output, as GPT-2)")
	fs.IntVar(&f.RandomFeatures, "random-features", 0, fmt.Sprintf("transformer: approximate the exponential or gaussian kernel by M positive random features (FAVOR+), at most %d; 0: exact attention", layers.MaxRandomFeatures))
	fs.IntVar(&f.Batch, "batch", 64, "batch size (sequences; images for dae and ldae, where the default is 128)")
	fs.Uint64Var(&f.Seed, "seed", 0, "random seed (parameters and data)")
	fs.IntVar(&f.SeqLen, "seqlen", 0, "sequence length (0: the task's default; charlm: 64; denoise-*: the base task's)")
	fs.Float64Var(&f.CorruptRate, "corrupt-rate", 0, "denoise-* tasks: fraction of positions corrupted, in (0, 1] (0: 0.15)")
	fs.StringVar(&f.CorruptMode, "corrupt-mode", "", "denoise-* tasks: corruption, mask (default) or substitute")
	fs.StringVar(&f.Data, "data", "", "charlm: a text file or folder (default: the Go standard library source)")
	fs.Int64Var(&f.MaxBytes, "maxbytes", 4<<20, "charlm: read at most this many bytes of text")
	fs.Float64Var(&f.ValFraction, "val-fraction", 0, "charlm: validate on the last F of the text, contiguous, as nanoGPT (0.1: the first 90 % trains); 0: every tenth 64 KiB block")
	fs.StringVar(&f.out, "out", "", "run directory for checkpoints and metrics: a new or empty folder, or a Locus run (default: runs/<task>-<n>, a new one)")
	fs.StringVar(&f.resume, "resume", "", "resume from this run or checkpoint directory (the model comes from the checkpoint)")
	fs.StringVar(&f.config, "config", "", "start from a run file (a run's config.json); flags given override it")
	defineSettingsFlags(fs, &f.settings)
	fs.StringVar(&f.Noise, "noise", "gaussian", "dae, ldae: corruption (gaussian, mask or saltpepper)")
	fs.Float64Var(&f.Sigma, "sigma", 0.3, "dae, ldae: noise level (Gaussian σ, or the corrupted fraction)")
	fs.StringVar(&f.MNIST, "mnist", "", "dae, ldae: folder of the MNIST IDX files (default: the GoMNIST module)")
}

func runTrain(args []string, stdout, stderr io.Writer) error {
	f, fs, err := parseTrainFlags(args, stderr)
	if err != nil {
		return err
	}
	comm, stdout, stderr, err := joinRun(stdout, stderr)
	if err != nil {
		return err
	}
	return leaveRun(comm, trainIn(comm, f, fs, stdout, stderr))
}

// parseTrainFlags parses locus train's command line.
func parseTrainFlags(args []string, stderr io.Writer) (*trainFlags, *flag.FlagSet, error) {
	fs := newFlagSet("train", "[flags]", stderr)
	f := &trainFlags{ModelFlags: ModelFlags{set: map[string]bool{}}}
	defineTrainFlags(fs, f)
	if err := parseFlags(fs, args); err != nil {
		return nil, nil, err
	}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	if f.set["random-features"] && f.RandomFeatures <= 0 { // 0 is exact attention, but not a value to give
		return nil, nil, usageErrorf("-random-features must be > 0, got %d (leave it out for exact attention)", f.RandomFeatures)
	}
	return f, fs, nil
}

// checkTrainArgs returns the error that `locus train args` would stop at before it
// trains: the flags parsed, the settings resolved, and the model and data
// configurations built and validated, as train does, with nothing written.
func checkTrainArgs(args []string) error {
	f, fs, err := parseTrainFlags(args, io.Discard)
	if err != nil {
		return err
	}
	f.checkOnly = true
	return trainIn(nil, f, fs, io.Discard, io.Discard)
}

// trainIn trains the model of the flags, as one process of comm.
func trainIn(comm *dist.Comm, f *trainFlags, fs *flag.FlagSet, stdout, stderr io.Writer) error {
	modelGiven := slices.ContainsFunc(modelFlags, func(n string) bool { return f.set[n] })
	var name string
	var fam Family
	var modelCfg, dataCfg json.RawMessage
	var err error
	switch {
	case f.resume != "" && f.config != "":
		return usageErrorf("-resume and -config do not go together: a resumed run keeps its own configuration")
	case f.resume != "":
		ck, err := train.LoadCheckpoint(f.resume)
		if err != nil {
			return err
		}
		if name, fam, err = checkpointFamily(ck); err != nil {
			return err
		}
		announceDataFiles(stderr, ck)
		if _, err := f.takeFrom(fs, savedRun{fam, ck.ModelConfig, ck.DataConfig, ck.TrainConfig, ck.Dir}, true); err != nil {
			return err
		}
		if err := f.validate(); err != nil {
			return err
		}
		modelCfg, dataCfg = ck.ModelConfig, ck.DataConfig
	case f.config != "":
		rc, err := readRunConfig(f.config)
		if err != nil {
			return err
		}
		if fam = families[rc.Family]; fam == nil {
			return fmt.Errorf("%s: model family %s is not one the command line knows (%s)", f.config, quote.Text(rc.Family), strings.Join(slices.Sorted(maps.Keys(families)), ", "))
		}
		saved, err := f.takeFrom(fs, savedRun{fam, rc.ModelConfig, rc.DataConfig, rc.Train, f.config}, false)
		if err != nil {
			return err
		}
		// Without model flags the run file's configurations are used as they are, so
		// that settings no flag sets are kept too.
		name, modelCfg, dataCfg = rc.Family, compactJSON(rc.ModelConfig), compactJSON(rc.DataConfig)
		rebuild, err := saved.rebuildsRunFile(rc.ModelConfig, f.config, modelGiven)
		if err != nil {
			return err
		}
		if rebuild {
			if name, fam, modelCfg, dataCfg, err = f.newConfigs(); err != nil {
				return err
			}
		} else if err := f.validate(); err != nil {
			return err
		}
	default:
		if err := resolveSettings(fs, &f.settings, f.set); err != nil {
			return err
		}
		if name, fam, modelCfg, dataCfg, err = f.newConfigs(); err != nil {
			return err
		}
	}
	if err := checkEstimate(fam, dataCfg, &f.settings); err != nil {
		return err
	}
	if f.checkOnly {
		return nil
	}
	defer f.settings.Threads.apply()()
	ps, err := autodiff.NewParams(f.settings.Dtype.Dtype, f.Seed)
	if err != nil {
		return err
	}
	s, err := openSession(name, fam, modelCfg, dataCfg, ps)
	if err != nil {
		return err
	}
	return fit(name, s, ps, modelCfg, f, comm, stdout, stderr)
}

// newConfigs returns the family and the model and data configurations of the flags.
func (f *trainFlags) newConfigs() (name string, fam Family, model, data json.RawMessage, err error) {
	if name, fam, err = familyOfKind(f.Model); err != nil {
		return
	}
	if name == "dae" {
		if !f.set["task"] {
			f.Task = "mnist"
		}
		if !f.set["batch"] {
			f.Batch = 128
		}
	}
	if !f.set["arch"] && f.Task == transformer.CharLM {
		f.Arch = transformer.ArchLM
	}
	if err = f.validate(); err != nil {
		return
	}
	m, d, err := fam.Configs(&f.ModelFlags)
	if err != nil {
		return
	}
	if model, err = json.Marshal(m); err != nil {
		err = fmt.Errorf("model family %s: model configuration: %w", quote.Text(name), err)
		return
	}
	if train.MissingConfig(model) {
		err = fmt.Errorf("model family %s: Configs returned no model configuration", quote.Text(name))
		return
	}
	if data, err = json.Marshal(d); err != nil {
		err = fmt.Errorf("model family %s: data configuration: %w", quote.Text(name), err)
		return
	}
	err = f.unused(name, fam, model, data)
	return
}

// unused reports a model or data flag given on the command line that the family's
// configurations do not hold: read back (Family.ToFlags), it has another value, so the
// family ignored it (-heads for a DAE, -noise for a Transformer, -layers for a family
// of one's own without layers). The rule comes from the family's own two methods, so
// a family of one's own gets it too.
func (f *trainFlags) unused(name string, fam Family, model, data json.RawMessage) error {
	back := &trainFlags{}
	backFS := flag.NewFlagSet("back", flag.ContinueOnError)
	defineTrainFlags(backFS, back)
	if err := fam.ToFlags(model, data, &back.ModelFlags); err != nil {
		return err
	}
	given := &trainFlags{}
	givenFS := flag.NewFlagSet("given", flag.ContinueOnError)
	defineTrainFlags(givenFS, given)
	given.ModelFlags = f.ModelFlags
	for _, n := range modelFlags {
		if !f.set[n] || n == "seqlen" && f.SeqLen == 0 || n == "dff" && f.DFF == 0 {
			continue // 0 asks for the default, which the configuration holds resolved
		}
		if v := givenFS.Lookup(n).Value.String(); v != backFS.Lookup(n).Value.String() {
			return usageErrorf("-%s %s is not used by -model %s (family %s): leave it out", n, v, f.Model, name)
		}
	}
	return nil
}

// validate checks the flags that no configuration validates.
func (f *trainFlags) validate() error {
	switch {
	case f.Batch <= 0 || f.Batch > transformer.MaxBatch:
		return usageErrorf("-batch must be in 1..%d, got %d", transformer.MaxBatch, f.Batch)
	case f.MaxBytes < 0 || f.MaxBytes > transformer.MaxCorpus:
		return usageErrorf("-maxbytes must be in 0..%d, got %d", transformer.MaxCorpus, f.MaxBytes)
	case f.SeqLen < 0:
		return usageErrorf("-seqlen must be >= 0, got %d", f.SeqLen)
	case (f.CorruptRate != 0 || f.CorruptMode != "") && !strings.HasPrefix(f.Task, "denoise-"):
		return usageErrorf("-corrupt-rate and -corrupt-mode are for the denoise-* tasks (got -task %s)", f.Task)
	}
	return f.settings.validate()
}

// savedRun is the configuration of an earlier run: a checkpoint's or a run file's.
type savedRun struct {
	family            Family
	model, data, sets json.RawMessage
	what              string // the checkpoint or file, for errors
}

// takeFrom fills the flags not given on the command line with the values of a saved
// run. On resume, a model or data flag given with a value other than the saved one is
// refused, naming the flag and both values, and so is another optimizer (its state
// would not fit).
// It returns the saved run as flags.
func (f *trainFlags) takeFrom(fs *flag.FlagSet, src savedRun, resume bool) (*trainFlags, error) {
	saved := &trainFlags{ModelFlags: ModelFlags{set: map[string]bool{}}}
	savedFS := flag.NewFlagSet("saved", flag.ContinueOnError)
	defineTrainFlags(savedFS, saved)
	if err := src.family.ToFlags(src.model, src.data, &saved.ModelFlags); err != nil {
		return nil, fmt.Errorf("%s: %w", src.what, err)
	}
	for _, name := range modelFlags {
		saved.set[name] = true
	}
	if err := readSettings(src.sets, savedFS, &saved.settings, src.what+": training settings"); err != nil {
		return nil, err
	}
	if resume {
		for _, name := range append(slices.Clone(modelFlags), "optim") {
			if !f.set[name] {
				continue
			}
			given, had := fs.Lookup(name).Value.String(), savedFS.Lookup(name).Value.String()
			switch {
			case given == had:
			case name == "optim":
				return nil, usageErrorf("-optim %s differs from the checkpoint's %s: the optimizer's state cannot carry over (train a new run with -out DIR)", given, had)
			default:
				return nil, usageErrorf("-%s %s differs from the checkpoint's %s: a resumed run keeps its model and data (train a new run with -out DIR to change them)", name, given, had)
			}
		}
	}
	take := func(name string) error {
		if f.set[name] {
			return nil
		}
		f.set[name] = true
		return fs.Set(name, savedFS.Lookup(name).Value.String())
	}
	isConditional := map[string]bool{}
	for _, c := range conditionals {
		isConditional[settingsFlags[c.key]] = true
	}
	names := slices.Clone(modelFlags)
	for _, key := range settingsKeys() {
		if name := settingsFlags[key]; !isConditional[name] {
			names = append(names, name)
		}
	}
	for _, name := range names {
		if err := take(name); err != nil {
			return nil, err
		}
	}
	// A setting of the saved optimizer or schedule carries over when the (possibly
	// different) one of this run uses it too.
	for _, c := range conditionals {
		if c.uses(&f.settings) && c.uses(&saved.settings) {
			if err := take(settingsFlags[c.key]); err != nil {
				return nil, err
			}
		}
	}
	return saved, resolveSettings(fs, &f.settings, f.set)
}

// rebuildsRunFile reports whether a run file's model configuration model is rebuilt
// from the flags rather than used as it is: when model flags are given (modelGiven), or
// when the file leaves out keys that the flags f (the file's own, as flags) rebuild, as a
// recipe leaves its vocabulary to the data that -data names. Then it is an error when the
// file has settings that no flag sets, rather than drop them; what names the file.
func (f *trainFlags) rebuildsRunFile(model json.RawMessage, what string, modelGiven bool) (bool, error) {
	_, _, raw, _, err := f.newConfigs()
	if err != nil {
		return false, err
	}
	var file, rebuilt map[string]any
	if err := json.Unmarshal(model, &file); err != nil {
		return false, fmt.Errorf("%s: model_config: %w", what, err)
	}
	if err := json.Unmarshal(raw, &rebuilt); err != nil {
		return false, err
	}
	leavesOut := false
	for k := range rebuilt {
		if _, ok := file[k]; !ok {
			leavesOut = true
		}
	}
	if !modelGiven && !leavesOut {
		return false, nil
	}
	var differ []string
	for _, k := range slices.Sorted(maps.Keys(file)) {
		if !reflect.DeepEqual(file[k], rebuilt[k]) {
			differ = append(differ, k)
		}
	}
	if len(differ) > 0 {
		return false, usageErrorf("%s: model_config sets %s, which no flag does: edit the file instead of passing model flags", what, strings.Join(differ, ", "))
	}
	return true, nil
}

// compactJSON returns raw without insignificant space (raw itself if it is not JSON).
func compactJSON(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// errInterrupted marks a run stopped by a signal (exit status 130, as a shell reports
// SIGINT).
var errInterrupted = errors.New("interrupted")

// fit trains the session's model with the optimizer of the settings, checkpointing into
// a run directory (-out, or a new runs/<task>-<n>), and prints the summary. With more
// than one process in comm, it is one process of a data-parallel run, and only rank 0
// writes.
func fit(famName string, s Session, ps *autodiff.Params, modelCfg json.RawMessage, f *trainFlags, comm *dist.Comm, stdout, stderr io.Writer) error {
	st := &f.settings
	if st.Best == "" {
		st.Best = s.BestMetric()
	}
	opt, err := st.newOptimizer(ps)
	if err != nil {
		return err
	}
	eval, err := evalOf(s, st)
	if err != nil {
		return err
	}
	data, err := s.TrainData()
	if err != nil {
		return err
	}
	dir := f.out
	if f.resume == "" {
		if dir == "" {
			if comm.Root() { // the other processes of a data-parallel run write nothing
				if dir, err = newRunDir("runs", f.Task); err != nil {
					return err
				}
			}
		} else if _, err := os.Stat(filepath.Join(dir, train.LatestFile)); err == nil {
			return usageErrorf("%s already holds a run: pass -resume %s to continue it, or -out DIR for a new one", dir, dir)
		}
	}
	run := autodiff.NewModel(ps, s.Builder(), f.Seed+1)
	if err := run.SetShards(st.Shards); err != nil {
		return usageErrorf("-shards: %v", err)
	}
	seed := f.Seed
	loop := &train.Loop{
		Model: run, Optimizer: opt, Data: data,
		Eval:    func(ctx context.Context) (train.Metrics, error) { return eval(ctx, run, seed+2) },
		Observe: bandwidthObserver(s, run, seed+4),
		Steps:   st.Steps, EvalEvery: st.EvalEvery, CheckpointEvery: st.EvalEvery, Accumulate: st.Accum,
		Dir: dir, KeepLast: st.Keep, Best: st.Best, BestMode: string(st.BestMode), Patience: st.Patience,
		ItemsName: s.ItemsName(), LossLabel: lossLabel(s), BandwidthLabel: bandwidthLabel(s), Family: famName, ModelConfig: modelCfg, DataConfig: s.DataConfig(), TrainConfig: *st, Out: stderr,
		Reducer: comm,
	}
	if f.resume != "" {
		if err := loop.Resume(f.resume); err != nil {
			return err
		}
	}
	if err := checkSameRun(comm, famName, modelCfg, s, data, loop.Step(), st); err != nil {
		return err
	}
	// The run file is written under the run directory's lock, so that of two trains
	// started into one directory only the one that runs writes it (in a data-parallel
	// run, rank 0: the others have no run directory to lock).
	loop.OnStart = func() error { return writeRunConfig(loop.Dir, famName, modelCfg, s.DataConfig(), *st) }
	if f.resume != "" {
		fmt.Fprintf(stderr, "locus train: resuming %s at step %d (to step %d): %s, %d parameters, %s", loop.Dir, loop.Step(), st.Steps, s.Describe(), ps.NumElements(), st.describe())
	} else {
		fmt.Fprintf(stderr, "locus train: %s, %d parameters, %s -> %s", s.Describe(), ps.NumElements(), st.describe(), loop.Dir)
	}
	if comm.Size() > 1 {
		fmt.Fprintf(stderr, " (%d processes, GOMAXPROCS %d each, %s)", comm.Size(), runtime.GOMAXPROCS(0), splitNote(s, f.Batch, comm.Size()))
	}
	fmt.Fprintln(stderr)
	ctx, stop := interruptible()
	defer stop()
	sum, err := loop.Run(ctx)
	if err != nil {
		if errors.Is(err, context.Canceled) && sum != nil {
			if sum.Checkpoint != "" && filepath.Base(sum.Checkpoint) == fmt.Sprintf("step-%06d", sum.Step) {
				return fmt.Errorf("%w after step %d; checkpoint saved in %s (continue with -resume %s)", errInterrupted, sum.Step, sum.Checkpoint, loop.Dir)
			}
			return fmt.Errorf("%w: %v", errInterrupted, err)
		}
		return err
	}
	fmt.Fprintf(stdout, "step %d  train loss %.4f", sum.Step, sum.Loss)
	for _, k := range slices.Sorted(maps.Keys(sum.Eval)) {
		if strings.HasPrefix(k, train.TrainPrefix) {
			fmt.Fprintf(stdout, "  %s %.4f", k, sum.Eval[k]) // an estimate on the training split: train_loss
		} else {
			fmt.Fprintf(stdout, "  val %s %.4f", k, sum.Eval[k])
		}
	}
	fmt.Fprintf(stdout, "  %.0f %s/s  %s\n", sum.ItemsPerSec, loop.ItemsName, sum.Elapsed.Round(1e8))
	if sum.StoppedEarly {
		fmt.Fprintf(stdout, "stopped early: best %s %.4f at step %d\n", st.Best, sum.BestValue, sum.BestStep)
	}
	fmt.Fprintf(stdout, "run: %s  checkpoint: %s\n", loop.Dir, sum.Checkpoint)
	t := sum.Time
	fmt.Fprintf(stderr, "time: steps %.3fs, evaluation %.3fs, checkpoints and plot %.3fs, data %.3fs, other %.3fs\n",
		t.Steps.Seconds(), t.Eval.Seconds(), t.Checkpoint.Seconds(), t.Data.Seconds(), t.Other.Seconds())
	reportReduce(stdout, comm, sum)
	if comm.Root() {
		if err := s.Finish(loop.Dir, run, seed+3, stdout); err != nil {
			return err
		}
	}
	bw := s.Bandwidths()
	for _, k := range slices.Sorted(maps.Keys(bw)) {
		fmt.Fprintf(stdout, "bandwidth %s = %.4g\n", k, bw[k])
	}
	return nil
}

// newRunDir creates and returns a new run directory parent/<task>-<n>, n one more than
// the largest there (creating it claims it, so two runs started together differ).
func newRunDir(parent, task string) (string, error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", err
	}
	entries, err := os.ReadDir(parent)
	if err != nil {
		return "", err
	}
	n := 1
	for _, e := range entries {
		if rest, ok := strings.CutPrefix(e.Name(), task+"-"); ok {
			if k, err := strconv.Atoi(rest); err == nil && k >= n {
				n = k + 1
			}
		}
	}
	for ; ; n++ {
		dir := filepath.Join(parent, fmt.Sprintf("%s-%d", task, n))
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, iofs.ErrExist) {
			return "", err
		}
	}
}
