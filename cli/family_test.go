package cli

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/layers"
	"github.com/locusml/locus/models/transformer"
	"github.com/locusml/locus/optim"
	"github.com/locusml/locus/train"
)

// tinyModel are the flags of a small, fast Transformer on a short toy task.
var tinyModel = []string{"-task", "reverse", "-seqlen", "6", "-layers", "1", "-dmodel", "8", "-heads", "2", "-dff", "16", "-batch", "8", "-eval-every", "25", "-eval-n", "16"}

// savedKernel returns the kernel spec in a checkpoint's model configuration.
func savedKernel(t *testing.T, dir string) string {
	t.Helper()
	ck, err := train.LoadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Kernel string `json:"kernel"`
	}
	if err := json.Unmarshal(ck.ModelConfig, &cfg); err != nil {
		t.Fatal(err)
	}
	return cfg.Kernel
}

// TestEveryKernelFormTrainsResumesEvals trains every form of the kernel spec language
// (each registered form's example, so a new kernel file is covered) and combinations with
// every bandwidth mode from the CLI for 50 steps, through a save, a resume and an eval.
func TestEveryKernelFormTrainsResumesEvals(t *testing.T) {
	type run struct{ kernel, bandwidth string }
	var runs []run
	for _, f := range layers.KernelForms() {
		runs = append(runs, run{f.Example, "fixed"})
	}
	for _, bw := range layers.BandwidthModeNames() {
		runs = append(runs, run{"product(gaussian, window(3)) * relbias(2)", bw})
	}
	runs = append(runs, run{"mixture(exponential, laplacian) * causal * distance(0.5)", "head"})
	for _, r := range runs {
		dir := filepath.Join(t.TempDir(), "run")
		// -seqlen 16: the examples' window(16) may not be wider than the sequence
		args := append(append([]string{"-kernel", r.kernel, "-bandwidth", r.bandwidth}, tinyModel...), "-seqlen", "16")
		if code, _, stderr := runCLI(t, append([]string{"train", "-steps", "25", "-out", dir}, args...)...); code != 0 {
			t.Errorf("%s, %s: train: exit %d\n%s", r.kernel, r.bandwidth, code, stderr)
			continue
		}
		want, err := layers.ParseKernel(r.kernel)
		if err != nil {
			t.Fatal(err)
		}
		if got := savedKernel(t, dir); got != want.Name() {
			t.Errorf("%s: checkpoint kernel %q, want %q", r.kernel, got, want.Name())
		}
		// Resume without the model flags: the model comes from the checkpoint.
		if code, _, stderr := runCLI(t, "train", "-steps", "50", "-resume", dir); code != 0 {
			t.Errorf("%s, %s: resume: exit %d\n%s", r.kernel, r.bandwidth, code, stderr)
			continue
		}
		code, stdout, stderr := runCLI(t, "eval", "-ckpt", dir, "-n", "16", "-json")
		var met map[string]float64
		if code != 0 || json.Unmarshal([]byte(stdout), &met) != nil || met["loss"] <= 0 {
			t.Errorf("%s, %s: eval: exit %d %q\n%s", r.kernel, r.bandwidth, code, stdout, stderr)
		}
		if ck, err := train.LoadCheckpoint(dir); err != nil || ck.Step != 50 {
			t.Errorf("%s: after resume: %v, %v", r.kernel, ck, err)
		}
	}
}

// TestKernelExpressionCharLM trains a character LM with a kernel expression and per-head
// bandwidths, then evaluates, samples, inspects and exports it.
func TestKernelExpressionCharLM(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "text.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("the quick brown fox jumps over the lazy dog. ", 200)), 0o644); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	code, stdout, stderr := runCLI(t, "train", "-task", "charlm", "-data", text, "-seqlen", "16", "-kernel", "product(gaussian, window(8))",
		"-bandwidth", "head", "-layers", "1", "-dmodel", "16", "-heads", "2", "-dff", "32", "-batch", "8", "-steps", "20", "-eval-every", "10", "-eval-n", "16", "-out", run)
	if code != 0 {
		t.Fatalf("train: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "kernel gaussian * window(8), bandwidth head") || !strings.Contains(stdout, "bandwidth blocks.0.attn.bandwidth = [") {
		t.Errorf("train output does not name the kernel and bandwidths:\n%s%s", stderr, stdout)
	}
	if code, stdout, stderr := runCLI(t, "eval", "-ckpt", run, "-n", "16"); code != 0 || !strings.Contains(stdout, "bpc") {
		t.Errorf("eval: exit %d %q %s", code, stdout, stderr)
	}
	if code, stdout, stderr := runCLI(t, "sample", "-ckpt", run, "-prompt", "the ", "-n", "20", "-temperature", "0"); code != 0 || !strings.HasPrefix(stdout, "the ") {
		t.Errorf("sample: exit %d %q %s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, "inspect", "-ckpt", run)
	if code != 0 || !strings.Contains(stdout, `"kernel": "gaussian * window(8)"`) || !strings.Contains(stdout, "bandwidths:") || !strings.Contains(stdout, "blocks.0.attn.bandwidth.rho") {
		t.Errorf("inspect: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, "export", "-format", "safetensors", "-ckpt", run, "-out", filepath.Join(dir, "m.safetensors"))
	if code != 0 || !strings.Contains(stdout, "gaussian * window(8)") {
		t.Errorf("export: exit %d %q %s", code, stdout, stderr)
	}
}

// TestResumeTakesModelFromCheckpoint: a resumed run keeps the checkpoint's model (a
// different model flag is refused, naming both values) and its training settings unless
// given again.
func TestResumeTakesModelFromCheckpoint(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	args := append([]string{"train", "-steps", "10", "-lr", "0.003", "-kernel", "gaussian", "-bandwidth", "head", "-out", dir}, tinyModel...)
	if code, _, stderr := runCLI(t, args...); code != 0 {
		t.Fatalf("train: exit %d\n%s", code, stderr)
	}
	settings := func() trainSettings {
		t.Helper()
		ck, err := train.LoadCheckpoint(dir)
		if err != nil {
			t.Fatal(err)
		}
		var s trainSettings
		if err := json.Unmarshal(ck.TrainConfig, &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"-kernel", "exponential"}, "-kernel exponential differs from the checkpoint's gaussian"},
		{[]string{"-bandwidth", "fixed"}, "-bandwidth fixed differs from the checkpoint's head"},
		{[]string{"-dmodel", "16"}, "-dmodel 16 differs from the checkpoint's 8"},
		{[]string{"-task", "sort"}, "-task sort differs from the checkpoint's reverse"},
		{[]string{"-model", "dae"}, "-model dae differs from the checkpoint's transformer"},
		{[]string{"-batch", "4"}, "-batch 4 differs from the checkpoint's 8"},
	} {
		code, _, stderr := runCLI(t, append([]string{"train", "-steps", "20", "-resume", dir}, tc.flags...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("resume %v: exit %d, %q; want exit 2 and %q", tc.flags, code, stderr, tc.want)
		}
	}
	// The same values, spelt differently, are not a change.
	if code, _, stderr := runCLI(t, "train", "-steps", "15", "-resume", dir, "-kernel", " Gaussian", "-dmodel", "8"); code != 0 {
		t.Fatalf("resume with the same model flags: exit %d\n%s", code, stderr)
	}
	if s := settings(); s.LR != 0.003 || s.Steps != 15 || s.EvalN != 16 {
		t.Errorf("settings after a resume without -lr: %+v, want lr 0.003 and steps 15 kept from the run", s)
	}
	if code, _, stderr := runCLI(t, "train", "-steps", "20", "-lr", "0.01", "-resume", dir); code != 0 {
		t.Fatalf("resume with -lr: exit %d\n%s", code, stderr)
	}
	if s := settings(); s.LR != 0.01 || s.Steps != 20 {
		t.Errorf("settings after a resume with -lr 0.01: %+v", s)
	}
}

// runmaxTask is a task defined outside Locus: the running maximum of digits.
type runmaxTask struct{ n int }

func (t runmaxTask) Name() string   { return "runmax" }
func (t runmaxTask) Vocab() int     { return 10 }
func (t runmaxTask) SeqLen() int    { return t.n }
func (t runmaxTask) AnswerLen() int { return t.n }
func (t runmaxTask) Sample(rng *rand.Rand) datasets.Example {
	in, out := make([]int, t.n), make([]int, t.n)
	m := 0
	for i := range in {
		in[i] = rng.IntN(10)
		m = max(m, in[i])
		out[i] = m
	}
	return datasets.Example{Input: in, Target: out}
}
func (t runmaxTask) Check(ex datasets.Example, pred []int) bool {
	m := 0
	for i, x := range ex.Input {
		m = max(m, x)
		if pred[i] != m {
			return false
		}
	}
	return true
}

func init() {
	datasets.RegisterTask("runmax", func(cfg datasets.TaskConfig) (datasets.Task, error) {
		return runmaxTask{n: max(cfg.SeqLen, 5)}, nil
	})
}

// TestLibraryCheckpoint: eval, inspect and export work on a checkpoint written by a
// user's own Go program with a task of its own; without a data configuration, inspect
// and export still work and eval says why it cannot.
func TestLibraryCheckpoint(t *testing.T) {
	write := func(dir string, withData bool) {
		t.Helper()
		d := transformer.DataConfig{Task: "runmax", TaskConfig: datasets.TaskConfig{SeqLen: 5}, Batch: 16, Seed: 3}
		data, err := d.Open()
		if err != nil {
			t.Fatal(err)
		}
		cfg := transformer.DefaultConfig(transformer.ArchEncoder, data.Vocab(), data.SeqLen())
		cfg.Dim, cfg.Heads, cfg.Layers, cfg.Hidden = 8, 2, 1, 16
		cfg.Kernel = layers.MustParseKernelSpec("exponential * relbias(3)")
		ps, _ := autodiff.NewParams(autodiff.Float32, 1)
		m, err := transformer.New(cfg, ps)
		if err != nil {
			t.Fatal(err)
		}
		run := autodiff.NewModel(ps, m.Builder(), 2)
		opt, _ := optim.NewAdam(optim.All(ps.List()), optim.DefaultAdamConfig())
		td, err := data.Train(cfg.Arch, 4)
		if err != nil {
			t.Fatal(err)
		}
		loop := &train.Loop{Model: run, Optimizer: opt, Data: td, Steps: 5, Dir: dir, Family: transformer.Family, ModelConfig: cfg}
		if withData {
			loop.DataConfig = data.Config
		}
		if _, err := loop.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	base := t.TempDir()
	withData, noData := filepath.Join(base, "data"), filepath.Join(base, "nodata")
	write(withData, true)
	write(noData, false)
	for _, dir := range []string{withData, noData} {
		code, stdout, stderr := runCLI(t, "inspect", "-ckpt", dir)
		if code != 0 || !strings.Contains(stdout, "blocks.0.attn.kernel.position.weight") || !strings.Contains(stdout, "model family transformer") {
			t.Errorf("inspect %s: exit %d\n%s%s", dir, code, stdout, stderr)
		}
		if code, _, stderr := runCLI(t, "export", "-format", "safetensors", "-ckpt", dir, "-out", filepath.Join(base, filepath.Base(dir)+".safetensors")); code != 0 {
			t.Errorf("export %s: exit %d\n%s", dir, code, stderr)
		}
	}
	code, stdout, stderr := runCLI(t, "eval", "-ckpt", withData, "-n", "32", "-json")
	var met map[string]float64
	if code != 0 || json.Unmarshal([]byte(stdout), &met) != nil || met["seq_acc"] < 0 {
		t.Errorf("eval of a runmax checkpoint: exit %d %q\n%s", code, stdout, stderr)
	}
	code, _, stderr = runCLI(t, "eval", "-ckpt", noData)
	if code != 1 || !strings.Contains(stderr, "no data configuration") || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
		t.Errorf("eval without a data config: exit %d, %q", code, stderr)
	}
}

// TestLocalizedDAEKernelSpec trains the localized DAE with a kernel expression, resumes
// it, evaluates it and finds the kernel in the checkpoint.
func TestLocalizedDAEKernelSpec(t *testing.T) {
	if _, err := datasets.DefaultMNISTDir(); err != nil {
		t.Skipf("MNIST not found: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "ldae")
	args := []string{"train", "-model", "ldae", "-kernel", "mixture(gaussian, cauchy)", "-steps", "4", "-batch", "16", "-eval-every", "2", "-eval-n", "32", "-out", dir}
	if code, stdout, stderr := runCLI(t, args...); code != 0 || !strings.Contains(stdout, "bandwidth level.0.attn.bandwidth") {
		t.Fatalf("train ldae: exit %d\n%s%s", code, stdout, stderr)
	}
	if got := savedKernel(t, dir); got != "mixture(gaussian, cauchy)" {
		t.Errorf("checkpoint kernel %q", got)
	}
	if code, _, stderr := runCLI(t, "train", "-steps", "6", "-resume", dir); code != 0 {
		t.Fatalf("resume ldae: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "train", "-steps", "8", "-resume", dir, "-kernel", "gaussian"); code != 2 || !strings.Contains(stderr, "-kernel gaussian differs from the checkpoint's mixture(gaussian, cauchy)") {
		t.Errorf("resume ldae with another kernel: exit %d, %q", code, stderr)
	}
	if code, stdout, stderr := runCLI(t, "eval", "-ckpt", dir, "-n", "32", "-json"); code != 0 || !strings.Contains(stdout, "mse_clean") {
		t.Errorf("eval ldae: exit %d %q %s", code, stdout, stderr)
	}
	if code, _, stderr := runCLI(t, "train", "-model", "dae", "-kernel", "gaussian", "-steps", "1"); code != 2 || !strings.Contains(stderr, "-kernel is for") {
		t.Errorf("dae with -kernel: exit %d, %q", code, stderr)
	}
}

// TestOldCheckpointLoads opens a checkpoint in the layout written before model families
// and typed configs (no model_family; the choices as plain strings), as earlier runs
// left on disk.
func TestOldCheckpointLoads(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if code, _, stderr := runCLI(t, append([]string{"train", "-steps", "5", "-out", dir}, tinyModel...)...); code != 0 {
		t.Fatalf("train: exit %d\n%s", code, stderr)
	}
	ck, err := train.LoadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	ck.Family, ck.TrainConfig = "", nil
	ck.ModelConfig = json.RawMessage(`{"arch":"encoder","vocab":10,"max_len":6,"dim":8,"heads":2,"layers":1,"hidden":16,"kernel":"exponential","bandwidth":"fixed","positions":"learned","post_ln":false,"tied":false,"activation":"gelu_tanh","dropout":0,"init":"gpt"}`)
	ck.DataConfig = json.RawMessage(`{"task":"reverse","task_config":{"SeqLen":6,"Vocab":0,"Digits":0,"Modulus":0,"Op":"","Pairs":0,"CorruptRate":0,"CorruptMode":""},"layout":"aligned","seq_len":0,"batch":8,"seed":0}`)
	old := filepath.Join(t.TempDir(), "old")
	if err := train.SaveCheckpoint(old, ck); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := runCLI(t, "eval", "-ckpt", old, "-n", "16", "-json"); code != 0 || !strings.Contains(stdout, "seq_acc") {
		t.Errorf("eval of an old checkpoint: exit %d %q %s", code, stdout, stderr)
	}
}

// TestNoFamilyOneLine: a checkpoint written by a train.Loop without Family (a user's
// own script) gets one line naming Loop.Family from every command that opens it,
// rather than an error of the Transformer's configuration parser.
func TestNoFamilyOneLine(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	ps, err := autodiff.NewParams(autodiff.Float32, 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg := transformer.DefaultConfig(transformer.ArchEncoder, 10, 8)
	cfg.Layers, cfg.Dim, cfg.Heads, cfg.Hidden = 1, 8, 2, 16
	m, err := transformer.New(cfg, ps)
	if err != nil {
		t.Fatal(err)
	}
	d, err := transformer.DataConfig{Task: "reverse", TaskConfig: datasets.TaskConfig{SeqLen: 8}, Batch: 4}.Open()
	if err != nil {
		t.Fatal(err)
	}
	data, err := d.Train(transformer.ArchEncoder, 1)
	if err != nil {
		t.Fatal(err)
	}
	opt, err := optim.NewAdam(optim.All(ps.List()), optim.DefaultAdamConfig())
	if err != nil {
		t.Fatal(err)
	}
	// A user's model config that is not the Transformer's, and no Family.
	loop := &train.Loop{Model: autodiff.NewModel(ps, m.Builder(), 1), Optimizer: opt, Data: data, Steps: 2, Dir: dir,
		ModelConfig: map[string]int{"width": 8}, Out: io.Discard}
	if _, err := loop.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "x")
	for _, args := range [][]string{
		{"eval", "-ckpt", dir},
		{"export", "-ckpt", dir, "-format", "torch", "-out", out},
		{"export", "-ckpt", dir, "-format", "safetensors", "-out", out},
		{"export", "-ckpt", dir, "-format", "onnx", "-out", out},
		{"inspect", "-ckpt", dir, "-attention", "-out", out},
		{"inspect", "-ckpt", dir, "-kernels", "-out", out},
		{"inspect", "-ckpt", dir, "-bandwidths"},
		{"report", "-ckpt", dir, "-out", out + ".html"},
		{"sample", "-ckpt", dir},
		{"train", "-resume", dir, "-steps", "4"},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "no model family recorded (written by a train.Loop without Family)") {
			t.Errorf("%s: exit %d, stderr %q, want exit 1 and one line naming Loop.Family", strings.Join(args, " "), code, stderr)
		}
	}
	// inspect's listing still shows the tensors, and ends with the line.
	code, stdout, stderr := runCLI(t, "inspect", "-ckpt", dir)
	if code != 1 || !strings.Contains(stdout, "model family (not recorded)") || !strings.Contains(stdout, "blocks.0.attn.q.weight") || !strings.Contains(stderr, "no model family recorded") {
		t.Errorf("inspect: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a command wrote %s", out)
	}
}
