package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/layers"
	"github.com/locusml/locus/models/transformer"
	"github.com/locusml/locus/optim"
	"github.com/locusml/locus/train"
)

func init() {
	register("train", "train a model (default: a Transformer on the reverse task)", runTrain)
}

// trainSettings are the training settings saved with a run; on -resume the ones not
// given on the command line keep the checkpoint's values.
type trainSettings struct {
	Steps     int     `json:"steps"`
	LR        float64 `json:"lr"`
	EvalEvery int     `json:"eval_every"`
	EvalN     int     `json:"eval_n"`
	Keep      int     `json:"keep"`
}

// trainFlags are the values of locus train's flags.
type trainFlags struct {
	model string
	// The model and its data: fixed for a run, so on -resume a different value is an
	// error.
	task, corruptMode, data, noise, mnist string
	arch                                  transformer.Arch
	kernel                                layers.KernelSpec
	bandwidth                             layers.BandwidthMode
	positions                             layers.PositionEncoding
	layers, dmodel, heads, dff, seqLen    int
	batch                                 int
	postLN                                bool
	dropout, corruptRate, sigma           float64
	maxBytes                              int64
	seed                                  uint64

	settings    trainSettings
	out, resume string

	set map[string]bool // the flags given on the command line
}

// Flags in each group of trainFlags.
var (
	modelFlags    = []string{"model", "task", "arch", "kernel", "bandwidth", "positions", "layers", "dmodel", "heads", "dff", "postln", "dropout", "seqlen", "corrupt-rate", "corrupt-mode", "data", "maxbytes", "batch", "seed", "noise", "sigma", "mnist"}
	settingsFlags = []string{"steps", "lr", "eval-every", "eval-n", "keep"}
)

// defineTrainFlags binds locus train's flags to f's fields.
func defineTrainFlags(fs *flag.FlagSet, f *trainFlags) {
	fs.StringVar(&f.task, "task", "reverse", "toy task ("+strings.Join(datasets.TaskNames(), ", ")+"), charlm, or mnist (with -model dae or ldae)")
	fs.StringVar(&f.model, "model", "transformer", "model: transformer, dae (MLP denoising autoencoder) or ldae (localized DAE)")
	fs.TextVar(&f.arch, "arch", transformer.ArchEncoder, "encoder, lm or encdec (default: encoder for toy tasks, lm for charlm)")
	fs.TextVar(&f.kernel, "kernel", layers.KernelSpec{Kernel: layers.Exponential{}}, "attention kernel spec (transformer, ldae), e.g. 'gaussian * window(8)' or 'mixture(exponential, laplacian)'; forms: "+strings.Join(layers.KernelNames(), ", "))
	fs.TextVar(&f.bandwidth, "bandwidth", layers.BandwidthFixed, "bandwidth mode: "+strings.Join(layers.BandwidthModeNames(), ", "))
	fs.TextVar(&f.positions, "positions", layers.PositionsLearned, "positions: "+strings.Join(layers.PositionEncodingNames(), ", "))
	fs.IntVar(&f.layers, "layers", 2, "number of blocks")
	fs.IntVar(&f.dmodel, "dmodel", 64, "model width")
	fs.IntVar(&f.heads, "heads", 4, "attention heads")
	fs.IntVar(&f.dff, "dff", 256, "feed-forward width")
	fs.BoolVar(&f.postLN, "postln", false, "post-LN blocks instead of pre-LN")
	fs.Float64Var(&f.dropout, "dropout", 0, "dropout probability")
	fs.IntVar(&f.settings.Steps, "steps", 1000, "training steps (dae, ldae: 469 steps of batch 128 make one MNIST epoch)")
	fs.IntVar(&f.batch, "batch", 64, "batch size (sequences; images for dae and ldae, where the default is 128)")
	fs.Float64Var(&f.settings.LR, "lr", 1e-3, "Adam learning rate")
	fs.Uint64Var(&f.seed, "seed", 0, "random seed (parameters and data)")
	fs.IntVar(&f.seqLen, "seqlen", 0, "sequence length (0: the task's default; charlm: 64; denoise-*: the base task's)")
	fs.Float64Var(&f.corruptRate, "corrupt-rate", 0, "denoise-* tasks: fraction of positions corrupted, in (0, 1] (0: 0.15)")
	fs.StringVar(&f.corruptMode, "corrupt-mode", "", "denoise-* tasks: corruption, mask (default) or substitute")
	fs.StringVar(&f.data, "data", "", "charlm: a text file or folder (default: the Go standard library source)")
	fs.Int64Var(&f.maxBytes, "maxbytes", 4<<20, "charlm: read at most this many bytes of text")
	fs.StringVar(&f.out, "out", "", "run directory for checkpoints and metrics (default: runs/<task>)")
	fs.StringVar(&f.resume, "resume", "", "resume from this run or checkpoint directory (the model comes from the checkpoint)")
	fs.IntVar(&f.settings.EvalEvery, "eval-every", 200, "evaluate every N steps")
	fs.IntVar(&f.settings.EvalN, "eval-n", 1000, "validation examples per evaluation")
	fs.IntVar(&f.settings.Keep, "keep", 3, "step checkpoints to keep")
	fs.StringVar(&f.noise, "noise", "gaussian", "dae, ldae: corruption (gaussian, mask or saltpepper)")
	fs.Float64Var(&f.sigma, "sigma", 0.3, "dae, ldae: noise level (Gaussian σ, or the corrupted fraction)")
	fs.StringVar(&f.mnist, "mnist", "", "dae, ldae: folder of the MNIST IDX files (default: the GoMNIST module)")
}

func runTrain(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("train", "[flags]", stderr)
	f := &trainFlags{set: map[string]bool{}}
	defineTrainFlags(fs, f)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })

	var name string
	var fam family
	var modelCfg, dataCfg json.RawMessage
	if f.resume != "" {
		ck, err := train.LoadCheckpoint(f.resume)
		if err != nil {
			return err
		}
		if name, fam, err = checkpointFamily(ck); err != nil {
			return err
		}
		if err := f.resumeFrom(fs, fam, ck); err != nil {
			return err
		}
		if err := f.validate(); err != nil {
			return err
		}
		modelCfg, dataCfg = ck.ModelConfig, ck.DataConfig
	} else {
		var err error
		if name, fam, err = familyOfKind(f.model); err != nil {
			return err
		}
		if name == "dae" {
			if !f.set["task"] {
				f.task = "mnist"
			}
			if !f.set["batch"] {
				f.batch = 128
			}
		}
		if !f.set["arch"] && f.task == transformer.CharLM {
			f.arch = transformer.ArchLM
		}
		if err := f.validate(); err != nil {
			return err
		}
		m, d, err := fam.configs(f)
		if err != nil {
			return err
		}
		if modelCfg, err = json.Marshal(m); err != nil {
			return err
		}
		if dataCfg, err = json.Marshal(d); err != nil {
			return err
		}
	}
	ps, err := autodiff.NewParams(autodiff.Float32, f.seed)
	if err != nil {
		return err
	}
	s, err := fam.open(modelCfg, dataCfg, ps)
	if err != nil {
		return err
	}
	return fit(name, s, ps, modelCfg, f, stdout, stderr)
}

// validate checks the flags that no configuration validates.
func (f *trainFlags) validate() error {
	st := f.settings
	switch {
	case st.Steps <= 0:
		return usageErrorf("-steps must be > 0, got %d", st.Steps)
	case f.batch <= 0 || f.batch > transformer.MaxBatch:
		return usageErrorf("-batch must be in 1..%d, got %d", transformer.MaxBatch, f.batch)
	case !(st.LR > 0):
		return usageErrorf("-lr must be > 0, got %g", st.LR)
	case f.seqLen < 0:
		return usageErrorf("-seqlen must be >= 0, got %d", f.seqLen)
	case st.EvalEvery < 0 || st.EvalN <= 0:
		return usageErrorf("-eval-every must be >= 0 and -eval-n > 0")
	case st.Keep < 0:
		return usageErrorf("-keep must be >= 0, got %d", st.Keep)
	case (f.set["corrupt-rate"] || f.set["corrupt-mode"]) && !strings.HasPrefix(f.task, "denoise-"):
		return usageErrorf("-corrupt-rate and -corrupt-mode are for the denoise-* tasks (got -task %s)", f.task)
	}
	return nil
}

// resumeFrom makes f continue the run of ck: a model or data flag given with a value
// other than the checkpoint's is refused, naming the flag and both values; training
// settings not given take the checkpoint's values.
func (f *trainFlags) resumeFrom(fs *flag.FlagSet, fam family, ck *train.Checkpoint) error {
	saved := &trainFlags{}
	savedFS := flag.NewFlagSet("checkpoint", flag.ContinueOnError)
	defineTrainFlags(savedFS, saved)
	if err := fam.toFlags(ck.ModelConfig, ck.DataConfig, saved); err != nil {
		return fmt.Errorf("%s: %w", ck.Dir, err)
	}
	if len(ck.TrainConfig) > 0 {
		if err := json.Unmarshal(ck.TrainConfig, &saved.settings); err != nil {
			return fmt.Errorf("%s: train config: %w", ck.Dir, err)
		}
	} else {
		saved.settings = f.settings // a checkpoint without settings: the flags' defaults
	}
	for _, name := range modelFlags {
		if !f.set[name] {
			continue
		}
		given, had := fs.Lookup(name).Value.String(), savedFS.Lookup(name).Value.String()
		if given != had {
			return usageErrorf("-%s %s differs from the checkpoint's %s: a resumed run keeps its model and data (train a new run with -out DIR to change them)", name, given, had)
		}
	}
	for _, name := range settingsFlags {
		if !f.set[name] {
			if err := fs.Set(name, savedFS.Lookup(name).Value.String()); err != nil {
				return err
			}
		}
	}
	saved.settings, saved.out, saved.resume, saved.set = f.settings, f.out, f.resume, f.set
	*f = *saved
	return nil
}

// fit trains the session's model with Adam, checkpointing into a run directory (-out,
// or runs/<task>), and prints the summary.
func fit(famName string, s session, ps *autodiff.Params, modelCfg json.RawMessage, f *trainFlags, stdout, stderr io.Writer) error {
	st := f.settings
	acfg := optim.DefaultAdamConfig()
	acfg.LR = st.LR
	opt, err := optim.NewAdam(optim.All(ps.List()), acfg)
	if err != nil {
		return err
	}
	data, err := s.trainData()
	if err != nil {
		return err
	}
	dir := f.out
	if dir == "" && f.resume == "" {
		dir = filepath.Join("runs", f.task)
	}
	if f.resume == "" {
		if _, err := os.Stat(filepath.Join(dir, train.LatestFile)); err == nil {
			return usageErrorf("%s already holds a run: pass -resume %s to continue it, or -out DIR for a new one", dir, dir)
		}
	}
	run := autodiff.NewModel(ps, s.builder(), f.seed+1)
	seed := f.seed
	loop := &train.Loop{
		Model: run, Optimizer: opt, Data: data,
		Eval:    func(context.Context) (train.Metrics, error) { return s.metrics(run, st.EvalN, seed+2) },
		Observe: bandwidthObserver(s, run, seed+4),
		Steps:   st.Steps, EvalEvery: st.EvalEvery, CheckpointEvery: st.EvalEvery,
		Dir: dir, KeepLast: st.Keep, Best: s.bestMetric(), BestMode: "min",
		ItemsName: s.itemsName(), LossLabel: lossLabel(s), Family: famName, ModelConfig: modelCfg, DataConfig: s.dataConfig(), TrainConfig: st, Out: stderr,
	}
	if f.resume != "" {
		if err := loop.Resume(f.resume); err != nil {
			return err
		}
	}
	fmt.Fprintf(stderr, "locus train: %s, %d parameters -> %s\n", s.describe(), ps.NumElements(), loop.Dir)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sum, err := loop.Run(ctx)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("interrupted: %w", err)
		}
		return err
	}
	fmt.Fprintf(stdout, "step %d  train loss %.4f", sum.Step, sum.Loss)
	for _, k := range sortedKeys(sum.Eval) {
		fmt.Fprintf(stdout, "  val %s %.4f", k, sum.Eval[k])
	}
	fmt.Fprintf(stdout, "  %.0f %s/s  %s\ncheckpoint: %s\n", sum.ItemsPerSec, loop.ItemsName, sum.Elapsed.Round(1e8), sum.Checkpoint)
	if err := s.finish(loop.Dir, run, seed+3, stdout); err != nil {
		return err
	}
	bw := s.bandwidths()
	for _, k := range sortedKeys(bw) {
		fmt.Fprintf(stdout, "bandwidth %s = %.4g\n", k, bw[k])
	}
	return nil
}
