package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/locusml/locus/bench"
	"github.com/locusml/locus/internal/regularfile"
	"github.com/locusml/locus/layers"
	"github.com/locusml/locus/models/transformer"
)

func init() {
	register("bench", "time the reference workloads (charlm, attn, dae), optionally against PyTorch", runBench)
}

// peerEnv names the environment variable that locates torch_peer.py.
const peerEnv = "LOCUS_TORCH_PEER"

// peerPath is where the peer script lives relative to a directory that holds it
// (the folder above a checkout, next to the repository).
var peerPath = filepath.Join("shared", "peers", "torch_peer.py")

// findPeer returns $LOCUS_TORCH_PEER, or shared/peers/torch_peer.py in the current
// directory or the nearest folder above it that has one.
func findPeer() (string, error) { return findUp(peerPath, peerEnv, "-compare") }

// findUp returns $env, or rel in the current directory or the nearest folder above it
// that has it (relative to the current directory); what names the flag that needs it.
func findUp(rel, env, what string) (string, error) {
	if p := os.Getenv(env); p != "" {
		return p, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		p := filepath.Join(dir, rel)
		if _, err := os.Stat(p); err == nil {
			if r, err := filepath.Rel(wd, p); err == nil {
				return r, nil
			}
			return p, nil
		}
		if filepath.Dir(dir) == dir {
			return "", usageErrorf("%s: no %s in %s or a folder above it: set %s", what, rel, wd, env)
		}
	}
}

func runBench(args []string, stdout, stderr io.Writer) (rerr error) {
	fs := newFlagSet("bench", "-workload charlm|attn|dae|all [flags]", stderr)
	workload := fs.String("workload", "charlm", "workload: "+strings.Join(bench.Names(), ", ")+" or all (the three), or "+strings.Join(bench.Extra(), ", ")+", or e2e (a whole locus train -task charlm run, 1500 steps unless -steps; with -compare also PyTorch's, bench/peers/torch_train.py, on the same token streams)")
	asJSON := fs.Bool("json", false, "print one JSON line per workload (the peer script's format)")
	steps := fs.Int("steps", 50, "timed iterations")
	warmup := fs.Int("warmup", 5, "untimed warm-up iterations")
	seed := fs.Uint64("seed", 0, "seed: parameters from seed, data from seed+1")
	var threads threadCount
	fs.Var(&threads, "threads", "GOMAXPROCS (0: leave as is; at most 64 per CPU)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the timed iterations to this file")
	memProfile := fs.String("memprofile", "", "write an allocation profile to this file at the end")
	compare := fs.Bool("compare", false, "run PyTorch's peer script and Locus back to back, each in its own process, and print the ratio table")
	peer := fs.String("peer", "", "-compare: path of torch_peer.py (default: $"+peerEnv+", else "+peerPath+" in the current folder or the nearest one above it, e.g. ../shared/peers/torch_peer.py from the repository)")
	python := fs.String("python", "/usr/bin/python3", "-compare: the Python interpreter with torch")
	var shape bench.Shape
	fs.IntVar(&shape.SeqLen, "seqlen", 0, "charlm, attn: sequence length; generate: the model's context (0: the workload's)")
	fs.IntVar(&shape.Batch, "batch", 0, "charlm, attn, dae: batch size (0: the workload's)")
	fs.StringVar(&shape.Kernel, "kernel", "", "charlm: attention kernel spec (default exponential)")
	fs.TextVar(&shape.Tiling, "tiling", layers.TilingAuto, "charlm: attention local mean: auto (by length), never or always tiled")
	fs.IntVar(&shape.RandomFeatures, "random-features", 0, fmt.Sprintf("charlm: random-feature attention with M features, at most %d (0: exact)", layers.MaxRandomFeatures))
	fs.TextVar(&shape.Bandwidth, "bandwidth", layers.BandwidthFixed, "charlm: bandwidth mode: "+strings.Join(layers.BandwidthModeNames(), ", "))
	fs.IntVar(&shape.Shards, "shards", 0, "parts of each batch run at once, one per core, each part's operations serial (0: one per GOMAXPROCS; 1: the batch whole, every operation split across cores)")
	fs.IntVar(&shape.NewTokens, "new-tokens", 0, fmt.Sprintf("generate: tokens per step, from a one-token prompt (0: %d, as torch_peer.py generate)", bench.GenerateTokens))
	var size modelSize
	fs.IntVar(&size.Dim, "dmodel", 64, "charlm, generate: model width (torch_peer.py's --d)")
	fs.IntVar(&size.Heads, "heads", 4, "charlm, generate: attention heads")
	fs.IntVar(&size.Layers, "layers", 2, "charlm, generate: number of blocks")
	fs.IntVar(&size.Hidden, "dff", 0, "charlm, generate: feed-forward width (0: 4·-dmodel)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := size.check(fs); err != nil {
		return err
	}
	shape.Dim, shape.Heads, shape.Layers, shape.Hidden = size.Dim, size.Heads, size.Layers, size.Hidden
	if !size.set {
		shape.Dim, shape.Heads, shape.Layers, shape.Hidden = 0, 0, 0, 0 // the workloads' own
	}
	if err := checkBenchSizes(*steps, *warmup, shape); err != nil {
		return err
	}
	known := *workload == "all" || *workload == "e2e" || slices.Contains(bench.Names(), *workload) || slices.Contains(bench.Extra(), *workload)
	if known && size.set && *workload != "charlm" && *workload != "generate" {
		return usageErrorf("-dmodel, -heads, -layers and -dff size -workload charlm or generate, not %s", *workload)
	}
	if known && shape.NewTokens != 0 && *workload != "generate" {
		return usageErrorf("-new-tokens %d is for -workload generate", shape.NewTokens)
	}
	if *workload == "e2e" {
		if *cpuProfile != "" || *memProfile != "" {
			return usageErrorf("-workload e2e runs locus train in a child process: no profiles")
		}
		o := e2eOptions{steps: e2eSteps, threads: int(threads), compare: *compare, python: *python, peer: *peer, asJSON: *asJSON}
		fs.Visit(func(fl *flag.Flag) {
			if fl.Name == "steps" {
				o.steps = *steps
			}
		})
		if o.steps <= 0 {
			return usageErrorf("-steps must be > 0, got %d", o.steps)
		}
		if o.compare && o.peer == "" {
			p, err := findPeer()
			if err != nil {
				return err
			}
			o.peer = p
		}
		return runE2E(o, stdout, stderr)
	}
	names := []string{*workload}
	if *workload == "all" {
		names = bench.Names()
	} else if !slices.Contains(bench.Names(), *workload) && !slices.Contains(bench.Extra(), *workload) {
		return usageErrorf("unknown -workload %q (valid: %s, all, e2e)", *workload, strings.Join(append(bench.Names(), bench.Extra()...), ", "))
	}
	if *workload == "generate" && shape.Batch > 1 {
		return usageErrorf("-batch %d: -workload generate decodes one sequence (batch 1)", shape.Batch)
	}
	if *compare && *workload == "generate" && size.set {
		return usageErrorf("-compare: torch_peer.py generate runs the reference size only (it takes --seqlen, not --d, --heads, --layers or --dff): leave out -dmodel, -heads, -layers and -dff, or time nanoGPT's generate beside it")
	}
	if *steps <= 0 {
		return usageErrorf("-steps must be > 0, got %d", *steps)
	}
	if *warmup < 0 {
		return usageErrorf("-warmup must be >= 0, got %d", *warmup)
	}
	defer threads.apply()()
	if *compare {
		if *peer == "" {
			p, err := findPeer()
			if err != nil {
				return err
			}
			*peer = p
		}
		return runCompare(names, *steps, *warmup, *seed, int(threads), shape, *python, *peer, *asJSON, stdout, stderr)
	}
	if len(names) > 1 && (*cpuProfile != "" || *memProfile != "") {
		return usageErrorf("-cpuprofile and -memprofile need a single -workload")
	}
	if len(names) > 1 {
		// One process per workload, so that peak memory is each workload's own.
		for _, n := range names {
			sub := append([]string{"-workload", n, "-steps", strconv.Itoa(*steps), "-warmup", strconv.Itoa(*warmup),
				"-seed", strconv.FormatUint(*seed, 10), "-threads", threads.String()}, shapeArgs(shape)...)
			if *asJSON {
				sub = append(sub, "-json")
			}
			out, err := runSelf(sub, stderr)
			if err != nil {
				return err
			}
			stdout.Write(out)
		}
		return nil
	}
	w, err := bench.NewShaped(names[0], *seed, *warmup+*steps, shape)
	if err != nil {
		return err
	}
	if *cpuProfile != "" {
		// Profile only the timed part: run the warm-up first, then time from scratch.
		f, err := regularfile.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		for i := range *warmup {
			if _, _, err := w.Step(i); err != nil {
				return err
			}
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() {
			pprof.StopCPUProfile()
			if rerr == nil {
				rerr = f.Commit()
			}
		}()
	}
	res, err := bench.Run(w, *warmup, *steps)
	if err != nil {
		return err
	}
	if *memProfile != "" {
		if err := regularfile.WriteFile(*memProfile, func(w io.Writer) error { return pprof.Lookup("allocs").WriteTo(w, 0) }); err != nil {
			return err
		}
	}
	if *asJSON {
		b, err := json.Marshal(res)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, string(b))
		return nil
	}
	printResult(stdout, res)
	return nil
}

// maxNewTokens bounds -new-tokens, as sample's -n.
const maxNewTokens = 1 << 20

// maxBenchSteps bounds -steps and -warmup: a workload prepares its batches for all of
// them before the first.
const maxBenchSteps = 1 << 20

// modelSize holds bench's -dmodel, -heads, -layers and -dff; set says whether any was
// given (else the workloads keep their own sizes).
type modelSize struct {
	Dim, Heads, Layers, Hidden int
	set                        bool
}

// check notes which size flags fs set and refuses, naming the flag and its value, a size
// the LM does not accept, as train's model flags are (transformer.Config.Validate).
func (s *modelSize) check(fs *flag.FlagSet) error {
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "dmodel", "heads", "layers", "dff":
			s.set = true
		}
	})
	for _, c := range []struct {
		flag        string
		v, min, max int
	}{
		{"dmodel", s.Dim, 1, transformer.MaxDim},
		{"heads", s.Heads, 1, transformer.MaxDim},
		{"layers", s.Layers, 1, transformer.MaxLayers},
		{"dff", s.Hidden, 0, 4 * transformer.MaxDim},
	} {
		if c.v < c.min {
			return usageErrorf("-%s %d, want at least %d", c.flag, c.v, c.min)
		}
		if c.v > c.max {
			return usageErrorf("-%s %d, want at most %d", c.flag, c.v, c.max)
		}
	}
	if s.Dim%s.Heads != 0 {
		return usageErrorf("-dmodel %d is not a multiple of -heads %d", s.Dim, s.Heads)
	}
	return nil
}

// checkBenchSizes refuses sizes beyond what the workloads' models accept, naming the
// flag, before anything is built.
func checkBenchSizes(steps, warmup int, s bench.Shape) error {
	for _, c := range []struct {
		flag        string
		v, min, max int
	}{
		{"steps", steps, 1, maxBenchSteps},
		{"warmup", warmup, 0, maxBenchSteps},
		{"seqlen", s.SeqLen, 0, transformer.MaxLen},
		{"batch", s.Batch, 0, transformer.MaxBatch},
		{"random-features", s.RandomFeatures, 0, layers.MaxRandomFeatures},
		{"shards", s.Shards, 0, math.MaxInt},
		{"new-tokens", s.NewTokens, 0, maxNewTokens},
	} {
		if c.v < c.min {
			return usageErrorf("-%s %d, want at least %d", c.flag, c.v, c.min)
		}
		if c.v > c.max {
			return usageErrorf("-%s %d, want at most %d", c.flag, c.v, c.max)
		}
	}
	return nil
}

// sizeKeys are the sizes a workload's config states, in the order sizeOf writes them,
// with their names there.
var sizeKeys = []struct{ key, name string }{
	{"d_model", "d"}, {"heads", "heads"}, {"layers", "layers"}, {"d_ff", "d_ff"}, {"context", "T"}, {"seq", "T"},
	{"batch", "batch"}, {"vocab", "vocab"},
}

// sizeOf writes the sizes of a workload's config (bench.Result.Config, or the peer's
// config): "d 384, heads 6, layers 6, d_ff 1536, T 256, batch 16, vocab 65".
func sizeOf(cfg map[string]any) string {
	var parts []string
	for _, k := range sizeKeys {
		if v, ok := cfg[k.key]; ok {
			parts = append(parts, fmt.Sprintf("%s %v", k.name, v))
		}
	}
	if len(parts) == 0 {
		return "sizes not stated"
	}
	return strings.Join(parts, ", ")
}

// sameSizes reports whether the sizes that both configs state are equal, and if not
// the first that differs. (The parameter counts may differ with a bandwidth mode or
// kernel that has parameters of its own, which the peer does not run.)
func sameSizes(a, b map[string]any) (string, bool) {
	for _, k := range sizeKeys {
		va, oka := a[k.key]
		vb, okb := b[k.key]
		if oka && okb && fmt.Sprint(va) != fmt.Sprint(vb) {
			return k.key, false
		}
	}
	return "", true
}

func printResult(w io.Writer, r *bench.Result) {
	fmt.Fprintf(w, "%s: median %.2f ms (p10 %.2f, p90 %.2f, mean %.2f) over %d steps after %d warm-up; GOMAXPROCS %d, kernels %v\n",
		r.Workload, r.Step.Median, r.Step.P10, r.Step.P90, r.Step.Mean, r.Step.N, r.Warmup, r.GOMAXPROCS, r.CPU)
	fmt.Fprintf(w, "  size: %s; %d parameters; %.4g FLOP per step (matrix products, bench/flops.go), %.1f GFLOP/s\n",
		sizeOf(r.Config), r.NParams, r.FLOPsPerStep, r.GFLOPS)
	if r.Workload != "generate" { // whose step is one whole generation
		fmt.Fprintf(w, "  fwd+bwd %.2f ms", r.FwdBwdMedianMs)
	}
	if r.OptMedianMs > 0 {
		fmt.Fprintf(w, ", optimizer %.2f ms", r.OptMedianMs)
	}
	if r.FwdMedianMs > 0 {
		fmt.Fprintf(w, ", forward only %.2f ms", r.FwdMedianMs)
	}
	if r.Workload != "generate" {
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "  %.0f %s/s, peak RSS %.1f MiB, %.0f allocations (%.0f KiB) per step, ",
		r.Throughput, r.Units, r.PeakRSSMiB, r.AllocsPerStep, r.BytesPerStep/1024)
	if r.OptMedianMs > 0 {
		fmt.Fprintf(w, "loss %.4f -> %.4f\n", r.LossFirst, r.LossLast)
	} else if r.Workload == "generate" {
		fmt.Fprintf(w, "one step = %v greedy tokens with the key/value cache, which holds %.3f MiB\n", r.Config["new_tokens"], r.KVCacheMiB)
	} else {
		// A timing-only workload (attn): its scalar is the sum of the outputs on random
		// data, which no optimizer lowers, so it is not shown as a loss.
		fmt.Fprintln(w, "timing only (forward and backward, no optimizer)")
	}
	fmt.Fprintf(w, "  CPU %.2f ms per step; other processes used %.2f cores meanwhile (0 = clean), this one %.2f\n", r.CPUMsPerStep, r.OtherCPUCores, r.OwnCPUCores)
}

// runSelf runs this binary's bench command with args and returns its stdout (a variable
// so that tests, whose binary is not locus, can run the command in their own process).
var runSelf = runSelfProcess

func runSelfProcess(args []string, stderr io.Writer) ([]byte, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, append([]string{"bench"}, args...)...)
	cmd.Stderr = stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("locus bench %s: %w", strings.Join(args, " "), err)
	}
	return out, nil
}

// peerResult is the part of torch_peer.py's JSON line that the ratio table uses.
type peerResult struct {
	Step          bench.Stats    `json:"step"`
	FwdBwd        bench.Stats    `json:"fwdbwd"` // attn reports its timing here
	Run           bench.Stats    `json:"run"`    // and generate here (one whole generation)
	PeakRSSMiB    float64        `json:"peak_rss_mib"`
	RSSImportMiB  float64        `json:"rss_after_import_mib"`
	NParams       int            `json:"n_params"`
	Config        map[string]any `json:"config"`
	OtherCPUCores float64        `json:"other_cpu_cores"`
	Env           struct {
		BLAS  string `json:"blas"`
		Torch string `json:"torch"`
	} `json:"env"`
}

// shapeArgs returns the flags that give a sub-process the sizes and attention of s.
func shapeArgs(s bench.Shape) []string {
	args := []string{"-seqlen", strconv.Itoa(s.SeqLen), "-batch", strconv.Itoa(s.Batch), "-new-tokens", strconv.Itoa(s.NewTokens), "-kernel", s.Kernel, "-tiling", s.Tiling.String(), "-random-features", strconv.Itoa(s.RandomFeatures), "-bandwidth", s.Bandwidth.String(), "-shards", strconv.Itoa(s.Shards)}
	if s.Dim != 0 { // a size was given (modelSize.set): all four are
		args = append(args, "-dmodel", strconv.Itoa(s.Dim), "-heads", strconv.Itoa(s.Heads), "-layers", strconv.Itoa(s.Layers), "-dff", strconv.Itoa(s.Hidden))
	}
	return args
}

// peerShapeArgs returns torch_peer.py's options for workload n's sizes in s (charlm:
// --seqlen, --batch, --d, --heads, --layers, --dff; generate: --seqlen, --new-tokens).
func peerShapeArgs(n string, s bench.Shape) []string {
	var args []string
	if (n == "charlm" || n == "generate") && s.SeqLen > 0 {
		args = append(args, "--seqlen", strconv.Itoa(s.SeqLen))
	}
	if n == "charlm" && s.Batch > 0 {
		args = append(args, "--batch", strconv.Itoa(s.Batch))
	}
	if n == "generate" && s.NewTokens > 0 {
		args = append(args, "--new-tokens", strconv.Itoa(s.NewTokens))
	}
	if n == "charlm" && s.Dim != 0 {
		args = append(args, "--d", strconv.Itoa(s.Dim), "--heads", strconv.Itoa(s.Heads), "--layers", strconv.Itoa(s.Layers), "--dff", strconv.Itoa(s.Hidden))
	}
	return args
}

func runCompare(names []string, steps, warmup int, seed uint64, threads int, shape bench.Shape, python, peer string, asJSON bool, stdout, stderr io.Writer) error {
	type row struct {
		name  string
		torch peerResult
		locus bench.Result
	}
	var rows []row
	blas := checkPeerBLAS(python, stderr)
	for _, n := range names {
		pargs := []string{peer, n, "--steps", strconv.Itoa(steps), "--warmup", strconv.Itoa(warmup), "--seed", strconv.FormatUint(seed, 10)}
		if threads > 0 {
			pargs = append(pargs, "--threads", strconv.Itoa(threads))
		}
		if n == "dae" {
			pargs = append(pargs, "--no-train")
		}
		pargs = append(pargs, peerShapeArgs(n, shape)...)
		fmt.Fprintf(stderr, "running %s %s\n", python, strings.Join(pargs, " "))
		cmd := exec.Command(python, pargs...)
		cmd.Env = blas.Env()
		var errBuf bytes.Buffer
		cmd.Stderr = &errBuf
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("torch peer %s: %w\n%s", n, err, errBuf.String())
		}
		var pr peerResult
		if err := json.Unmarshal(lastLine(out), &pr); err != nil {
			return fmt.Errorf("torch peer %s: %w", n, err)
		}
		if pr.PeakRSSMiB == 0 {
			pr.PeakRSSMiB = childMaxRSSMiB(cmd) // a peer that does not report it
		}
		if pr.Step.N == 0 {
			pr.Step = pr.FwdBwd
		}
		if pr.Step.N == 0 {
			pr.Step = pr.Run
		}
		fmt.Fprintf(stderr, "running locus bench -workload %s\n", n)
		out, err = runSelf(append([]string{"-workload", n, "-json", "-steps", strconv.Itoa(steps), "-warmup", strconv.Itoa(warmup),
			"-seed", strconv.FormatUint(seed, 10), "-threads", strconv.Itoa(threads)}, shapeArgs(shape)...), stderr)
		if err != nil {
			return err
		}
		var lr bench.Result
		if err := json.Unmarshal(lastLine(out), &lr); err != nil {
			return fmt.Errorf("locus bench %s: %w", n, err)
		}
		if key, ok := sameSizes(pr.Config, lr.Config); !ok {
			return fmt.Errorf("torch peer %s: ran %s, Locus %s: not the same model (%s differs)", n, sizeOf(pr.Config), sizeOf(lr.Config), key)
		}
		if asJSON {
			b, _ := json.Marshal(map[string]any{"workload": n, "torch": pr, "torch_blas_core": blas.Core, "locus": lr, "ratio": lr.Step.Median / pr.Step.Median})
			fmt.Fprintln(stdout, string(b))
		}
		rows = append(rows, row{n, pr, lr})
	}
	if asJSON {
		return nil
	}
	fmt.Fprintln(stdout, "| workload | PyTorch median (p10–p90) ms | Locus median (p10–p90) ms | ratio Locus/PyTorch | GFLOP per step | GFLOP/s PyTorch, Locus | PyTorch peak RSS MiB | Locus peak RSS MiB | Locus allocs/step | other load (torch, locus) |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Fprintf(stdout, "| %s | %.1f (%.1f–%.1f) | %.1f (%.1f–%.1f) | %.2f | %.3g | %.1f, %.1f | %.0f | %.0f | %.0f | %.2f, %.2f |\n",
			r.name, r.torch.Step.Median, r.torch.Step.P10, r.torch.Step.P90,
			r.locus.Step.Median, r.locus.Step.P10, r.locus.Step.P90, r.locus.Step.Median/r.torch.Step.Median,
			r.locus.FLOPsPerStep/1e9, r.locus.FLOPsPerStep/r.torch.Step.Median/1e6, r.locus.GFLOPS,
			r.torch.PeakRSSMiB, r.locus.PeakRSSMiB, r.locus.AllocsPerStep, r.torch.OtherCPUCores, r.locus.OtherCPUCores)
	}
	fmt.Fprintln(stdout)
	for _, r := range rows {
		fmt.Fprintf(stdout, "%s: PyTorch %s, %d parameters; Locus %s, %d parameters\n", r.name, sizeOf(r.torch.Config), r.torch.NParams, sizeOf(r.locus.Config), r.locus.NParams)
	}
	if len(rows) > 0 {
		fmt.Fprintf(stdout, "PyTorch %s (%s, %s), Locus %s with %v kernels, GOMAXPROCS %d; steps %d after %d warm-up.\n",
			rows[0].torch.Env.Torch, rows[0].torch.Env.BLAS, blas, rows[0].locus.GoVersion, rows[0].locus.CPU, rows[0].locus.GOMAXPROCS, steps, warmup)
	}
	return nil
}

// childMaxRSSMiB returns the peak resident set size of cmd's finished process
// (getrusage of the child, ru_maxrss) in MiB, or 0 where the system does not say.
func childMaxRSSMiB(cmd *exec.Cmd) float64 {
	if cmd.ProcessState == nil {
		return 0
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	return math.Round(float64(ru.Maxrss)/1024*10) / 10 // KiB on Linux
}

func lastLine(b []byte) []byte {
	b = bytes.TrimSpace(b)
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return b[i+1:]
	}
	return b
}
