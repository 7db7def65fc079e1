package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/layers"
	"github.com/locusml/locus/models/dae"
	"github.com/locusml/locus/models/transformer"
	"github.com/locusml/locus/optim"
	"github.com/locusml/locus/train"
)

func init() {
	register("train", "train a model (default: a Transformer on the reverse task)", runTrain)
}

func runTrain(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("train", "[flags]", stderr)
	taskName := fs.String("task", "reverse", "toy task ("+strings.Join(datasets.TaskNames(), ", ")+"), charlm, or mnist (with -model dae or ldae)")
	modelName := fs.String("model", "transformer", "model: transformer, dae (MLP denoising autoencoder) or ldae (localized DAE)")
	var arch transformer.Arch
	fs.TextVar(&arch, "arch", transformer.ArchEncoder, "encoder, lm or encdec (default: encoder for toy tasks, lm for charlm)")
	kernel := layers.KernelSpec{Kernel: layers.Exponential{}}
	fs.TextVar(&kernel, "kernel", kernel, "attention kernel spec, e.g. 'gaussian * window(8)': "+strings.Join(layers.KernelNames(), ", "))
	var bandwidth layers.BandwidthMode
	fs.TextVar(&bandwidth, "bandwidth", layers.BandwidthFixed, "bandwidth mode: "+strings.Join(layers.BandwidthModeNames(), ", "))
	var positions layers.PositionEncoding
	fs.TextVar(&positions, "positions", layers.PositionsLearned, "positions: "+strings.Join(layers.PositionEncodingNames(), ", "))
	nLayers := fs.Int("layers", 2, "number of blocks")
	dModel := fs.Int("dmodel", 64, "model width")
	heads := fs.Int("heads", 4, "attention heads")
	dff := fs.Int("dff", 256, "feed-forward width")
	postLN := fs.Bool("postln", false, "post-LN blocks instead of pre-LN")
	dropout := fs.Float64("dropout", 0, "dropout probability")
	steps := fs.Int("steps", 1000, "training steps (dae, ldae: 469 steps of batch 128 make one MNIST epoch)")
	batch := fs.Int("batch", 64, "batch size (sequences; images for dae and ldae, where the default is 128)")
	lr := fs.Float64("lr", 1e-3, "Adam learning rate")
	seed := fs.Uint64("seed", 0, "random seed (parameters and data)")
	seqLen := fs.Int("seqlen", 0, "sequence length (0: the task's default; charlm: 64; denoise-*: the base task's)")
	corruptRate := fs.Float64("corrupt-rate", 0, "denoise-* tasks: fraction of positions corrupted, in (0, 1] (0: 0.15)")
	corruptMode := fs.String("corrupt-mode", "", "denoise-* tasks: corruption, mask (default) or substitute")
	data := fs.String("data", "", "charlm: a text file or folder (default: the Go standard library source)")
	maxBytes := fs.Int64("maxbytes", 4<<20, "charlm: read at most this many bytes of text")
	out := fs.String("out", "", "run directory for checkpoints and metrics (default: runs/<task>)")
	resume := fs.String("resume", "", "resume from this run or checkpoint directory")
	evalEvery := fs.Int("eval-every", 200, "evaluate every N steps")
	evalN := fs.Int("eval-n", 1000, "validation examples per evaluation")
	keep := fs.Int("keep", 3, "step checkpoints to keep")
	noise := fs.String("noise", "gaussian", "dae, ldae: corruption (gaussian, mask or saltpepper)")
	sigma := fs.Float64("sigma", 0.3, "dae, ldae: noise level (Gaussian σ, or the corrupted fraction)")
	mnistDir := fs.String("mnist", "", "dae, ldae: folder of the MNIST IDX files (default: the GoMNIST module)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	isDAE := *modelName == "dae" || *modelName == "ldae"
	if isDAE && !set["task"] {
		*taskName = "mnist"
	}
	switch {
	case *modelName != "transformer" && !isDAE:
		return usageErrorf("unknown -model %q (want transformer, dae or ldae)", *modelName)
	case isDAE != (*taskName == "mnist"):
		return usageErrorf("-task mnist goes with -model dae or ldae (got -model %s -task %s)", *modelName, *taskName)
	case *steps <= 0:
		return usageErrorf("-steps must be > 0, got %d", *steps)
	case *batch <= 0:
		return usageErrorf("-batch must be > 0, got %d", *batch)
	case !(*lr > 0):
		return usageErrorf("-lr must be > 0, got %g", *lr)
	case *seqLen < 0:
		return usageErrorf("-seqlen must be >= 0, got %d", *seqLen)
	case *evalEvery < 0 || *evalN <= 0:
		return usageErrorf("-eval-every must be >= 0 and -eval-n > 0")
	}
	if *taskName != "charlm" && *taskName != "mnist" && !slices.Contains(datasets.TaskNames(), *taskName) {
		return usageErrorf("unknown -task %q (valid: %s, charlm, mnist)", *taskName, strings.Join(datasets.TaskNames(), ", "))
	}
	if *taskName != "charlm" && *data != "" {
		return usageErrorf("-data is for -task charlm")
	}
	if (set["corrupt-rate"] || set["corrupt-mode"]) && !strings.HasPrefix(*taskName, "denoise-") {
		return usageErrorf("-corrupt-rate and -corrupt-mode are for the denoise-* tasks (got -task %s)", *taskName)
	}

	s := &session{data: dataConfig{Task: *taskName, Batch: *batch, Seed: *seed, MNIST: *mnistDir}}
	if isDAE {
		if !set["batch"] {
			s.data.Batch = 128
		}
		s.daeCfg = dae.DefaultConfig()
		if *modelName == "ldae" {
			s.daeCfg = dae.DefaultLocalizedConfig()
		}
		s.daeCfg.Noise, s.daeCfg.Sigma = *noise, *sigma
		if err := s.daeCfg.Validate(); err != nil {
			return usageErrorf("%v", err)
		}
		if err := s.loadData(); err != nil {
			return err
		}
		if err := s.buildDAE(*seed); err != nil {
			return err
		}
		d, err := s.newDAEData()
		if err != nil {
			return err
		}
		return s.fit(d, *steps, *lr, *evalEvery, *evalN, *keep, *out, *resume, *seed, stdout, stderr)
	}
	if !set["arch"] && *taskName == "charlm" {
		arch = transformer.ArchLM
	}
	if *taskName == "charlm" {
		s.data.Corpus, s.data.MaxBytes, s.data.SeqLen = *data, *maxBytes, *seqLen
		if s.data.SeqLen == 0 {
			s.data.SeqLen = 64
		}
		if arch != transformer.ArchLM {
			return usageErrorf("-task charlm needs -arch lm")
		}
	} else {
		s.data.TaskConfig = datasets.TaskConfig{SeqLen: *seqLen, CorruptRate: *corruptRate, CorruptMode: *corruptMode}
		if _, err := datasets.TaskByName(*taskName, s.data.TaskConfig); err != nil {
			return usageErrorf("%v", err) // a bad -seqlen or -corrupt-* value
		}
		s.data.Layout = "aligned"
		if arch == transformer.ArchLM {
			s.data.Layout = "causal"
		}
	}
	if err := s.loadData(); err != nil {
		return err
	}
	vocab := s.vocab()
	if arch == transformer.ArchEncDec {
		vocab++ // the decoder's start token, id s.task.Vocab()
	}
	s.cfg = transformer.DefaultConfig(arch, vocab, s.seqLen())
	s.cfg.Kernel, s.cfg.Bandwidth, s.cfg.Positions = kernel, bandwidth, positions
	s.cfg.Layers, s.cfg.Dim, s.cfg.Heads, s.cfg.Hidden = *nLayers, *dModel, *heads, *dff
	s.cfg.PostLN, s.cfg.Dropout = *postLN, *dropout
	if err := s.cfg.Validate(); err != nil {
		return usageErrorf("%v", err)
	}
	if err := s.build(*seed); err != nil {
		return err
	}
	var stream *datasets.Stream
	var err error
	if s.corpus != nil {
		stream, err = datasets.NewCorpusStream(s.corpus, datasets.Train, *batch, s.data.SeqLen, *seed+1)
	} else {
		stream, err = datasets.NewTaskStream(s.task, s.layout, *batch, *seed+1)
	}
	if err != nil {
		return err
	}
	var loopData train.Data = &transformer.StreamData{Stream: stream, Tokens: s.corpus != nil}
	if s.cfg.Arch == transformer.ArchEncDec {
		loopData = &transformer.EncDecData{Stream: stream, BOS: s.task.Vocab()}
	}
	return s.fit(loopData, *steps, *lr, *evalEvery, *evalN, *keep, *out, *resume, *seed, stdout, stderr)
}

// fit trains the session's model with Adam on data, checkpointing into a run directory
// (out, or runs/<task>), and prints the summary.
func (s *session) fit(data train.Data, steps int, lr float64, evalEvery, evalN, keep int, out, resume string, seed uint64, stdout, stderr io.Writer) error {
	acfg := optim.DefaultAdamConfig()
	acfg.LR = lr
	opt, err := optim.NewAdam(optim.All(s.params.List()), acfg)
	if err != nil {
		return err
	}
	dir := out
	if dir == "" && resume == "" {
		dir = filepath.Join("runs", s.data.Task)
	}
	if resume == "" {
		if _, err := os.Stat(filepath.Join(dir, train.LatestFile)); err == nil {
			return usageErrorf("%s already holds a run: pass -resume %s to continue it, or -out DIR for a new one", dir, dir)
		}
	}
	best := "val_" + transformer.MetricLoss
	if s.dae != nil {
		best = "val_" + metricMSEClean
	}
	loop := &train.Loop{
		Model: s.run, Optimizer: opt, Data: data,
		Eval:  func(context.Context) (train.Metrics, error) { return s.metrics(evalN, seed+2) },
		Steps: steps, EvalEvery: evalEvery, CheckpointEvery: evalEvery,
		Dir: dir, KeepLast: keep, Best: best, BestMode: "min",
		ItemsName: "samples", ModelConfig: s.modelConfig(), DataConfig: s.data, Out: stderr,
	}
	if s.corpus != nil {
		loop.ItemsName = "tokens"
	}
	if resume != "" {
		if err := loop.Resume(resume); err != nil {
			return err
		}
	}
	if s.dae != nil {
		fmt.Fprintf(stderr, "locus train: mnist, %s, %d parameters -> %s\n", s.daeCfg, s.params.NumElements(), loop.Dir)
	} else {
		fmt.Fprintf(stderr, "locus train: %s, %s %d×%d, %d heads, kernel %s, bandwidth %s, %d parameters -> %s\n",
			s.data.Task, s.cfg.Arch, s.cfg.Layers, s.cfg.Dim, s.cfg.Heads, s.cfg.Kernel, s.cfg.Bandwidth, s.params.NumElements(), loop.Dir)
	}
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
	if s.dae != nil {
		grid, err := s.writeDAEGrid(loop.Dir, seed+3)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "denoised test digits: %s\n", grid)
	}
	if s.dae != nil || s.cfg.Bandwidth != layers.BandwidthFixed {
		bw := s.bandwidths()
		for _, k := range sortedKeys(bw) {
			fmt.Fprintf(stdout, "bandwidth %s = %.4g\n", k, bw[k])
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
