// Package bench runs Locus's reference workloads (../shared/peers/WORKLOADS.md): the
// char-LM train step, the attention forward+backward and the denoising-autoencoder train
// step, with exactly the shapes, initialisation and optimizer of PyTorch's peer script, and
// reports step-time statistics, throughput, peak memory and allocations per step in the
// peer's format, so that the two can be compared side by side.
package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/internal/simd"
	"github.com/locusml/locus/layers"
	"github.com/locusml/locus/models/dae"
	"github.com/locusml/locus/models/transformer"
	"github.com/locusml/locus/optim"
	"github.com/locusml/locus/train"
)

// Names lists the step workloads (the ones -workload all runs).
func Names() []string { return []string{"charlm", "attn", "dae"} }

// Extra lists the other workloads: generate (tokens/s of `locus sample`'s decoding).
func Extra() []string { return []string{"generate"} }

// Workload is one prepared workload: Step runs timed iteration i (data for every
// iteration is generated before the timed loop).
type Workload struct {
	Name    string
	Params  *autodiff.Params
	Units   string // "tokens" or "samples"
	PerStep int    // units per step
	// Step runs iteration i and returns its loss (NaN when there is none); fwdBwd is the
	// time of the forward+backward pass, the rest is the optimizer.
	Step func(i int) (loss float64, fwdBwd time.Duration, err error)
	// Forward, if not nil, runs a forward-only pass of iteration i (attn).
	Forward func(i int) error
	Config  map[string]any
	// FLOPs is the floating-point operations of one step, counted as flops.go says.
	FLOPs float64
	// CacheBytes, if not nil, returns the bytes the generate workload's key/value cache
	// holds after its last step.
	CacheBytes func() int64
}

// New prepares workload name for n iterations with seed (parameters from seed, data
// from seed+1, as the peer script).
func New(name string, seed uint64, n int) (*Workload, error) {
	return NewShaped(name, seed, n, Shape{})
}

// Shape overrides sizes of the workloads (zero fields keep the reference's; dae takes a
// batch, not a sequence length) and, for charlm, the attention kernel and its tiling: the long-sequence
// sweeps.
type Shape struct {
	SeqLen, Batch int
	Kernel        string // a kernel spec (layers.ParseKernel); "" is exponential
	Tiling        layers.Tiling
	// RandomFeatures m > 0 runs random-feature attention (layers.AttentionConfig).
	RandomFeatures int
	// Bandwidth is the attention layers' bandwidth mode (fixed by default).
	Bandwidth layers.BandwidthMode
	// Shards, for every workload, is how many parts of each batch run at once
	// (autodiff.Model.SetShards): 0 one per GOMAXPROCS, 1 the batch whole.
	Shards int
	// Dim, Heads, Layers and Hidden size the charlm and generate workloads' LM (0 keeps
	// the reference's d = 64, 4 heads, 2 layers; Hidden 0 is d_ff = 4·Dim), as
	// torch_peer.py charlm's --d, --heads, --layers and --dff.
	Dim, Heads, Layers, Hidden int
	// NewTokens is the generate workload's tokens per step (0: GenerateTokens).
	NewTokens int
}

// sized reports whether s sets a model size.
func (s Shape) sized() bool { return s.Dim != 0 || s.Heads != 0 || s.Layers != 0 || s.Hidden != 0 }

// lmConfig returns the charlm and generate workloads' LM of vocabulary V and context T,
// the reference's with the sizes of s, validated (errors name the field).
func (s Shape) lmConfig(V, T int) (transformer.Config, error) {
	cfg := transformer.DefaultConfig(transformer.ArchLM, V, T)
	cfg.Dim, cfg.Heads, cfg.Layers, cfg.Hidden = or(s.Dim, cfg.Dim), or(s.Heads, cfg.Heads), or(s.Layers, cfg.Layers), s.Hidden
	return cfg, cfg.Validate()
}

// NewShaped is New with the sizes and attention of s.
func NewShaped(name string, seed uint64, n int, s Shape) (*Workload, error) {
	if s.SeqLen < 0 || s.Batch < 0 {
		return nil, fmt.Errorf("sequence length %d and batch %d, want >= 0 (0 keeps the workload's)", s.SeqLen, s.Batch)
	}
	if s.Dim < 0 || s.Heads < 0 || s.Layers < 0 || s.Hidden < 0 {
		return nil, fmt.Errorf("dim %d, heads %d, layers %d and hidden %d, want >= 0 (0 keeps the workload's)", s.Dim, s.Heads, s.Layers, s.Hidden)
	}
	if s.sized() && name != "charlm" && name != "generate" {
		return nil, fmt.Errorf("workload %s takes no model size (charlm and generate do)", name)
	}
	if s.NewTokens < 0 || s.NewTokens > 0 && name != "generate" {
		return nil, fmt.Errorf("new tokens %d: for the generate workload, >= 0 (0: %d)", s.NewTokens, GenerateTokens)
	}
	if name == "generate" && s.Batch > 1 {
		return nil, fmt.Errorf("workload generate decodes one sequence: batch %d, want 1", s.Batch)
	}
	if s.Shards < 0 {
		return nil, fmt.Errorf("shards = %d, want >= 0 (0: one per GOMAXPROCS)", s.Shards)
	}
	if name == "dae" && s.SeqLen > 0 {
		return nil, fmt.Errorf("workload dae takes no sequence length")
	}
	if name != "charlm" && (s.Kernel != "" || s.Tiling != layers.TilingAuto || s.RandomFeatures != 0 || s.Bandwidth != layers.BandwidthFixed) {
		return nil, fmt.Errorf("workload %s takes no kernel, tiling, random features or bandwidth mode (charlm does)", name)
	}
	switch name {
	case "charlm":
		return newCharLM(seed, n, s)
	case "attn":
		return newAttn(seed, n, s)
	case "dae":
		return newDAE(seed, n, s)
	case "generate":
		return newGenerate(seed, s)
	}
	return nil, fmt.Errorf("unknown workload %q (valid: %s)", name, strings.Join(append(Names(), Extra()...), ", "))
}

func newAdam(ps *autodiff.Params, lr float64) (*optim.Adam, error) {
	cfg := optim.DefaultAdamConfig()
	cfg.LR = lr
	return optim.NewAdam(optim.All(ps.List()), cfg)
}

// or returns def.
func or(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

func newCharLM(seed uint64, n int, shape Shape) (*Workload, error) {
	const V = 65
	T, B := or(shape.SeqLen, 64), or(shape.Batch, 32)
	cfg, err := shape.lmConfig(V, T)
	if err != nil {
		return nil, err
	}
	// The batches of every iteration are made before the first: 2·B·T ids each.
	if err := train.CheckMemory(fmt.Sprintf("charlm at dim %d, %d layers, %d heads, batch %d of %d tokens", cfg.Dim, cfg.Layers, cfg.Heads, B, T),
		cfg.MemoryEstimate(B, T)+uint64(n)*uint64(B)*uint64(T)*16); err != nil {
		return nil, err
	}
	ps, err := autodiff.NewParams(autodiff.Float32, seed)
	if err != nil {
		return nil, err
	}
	cfg.Tiling, cfg.RandomFeatures, cfg.Bandwidth = shape.Tiling, shape.RandomFeatures, shape.Bandwidth
	if shape.Kernel != "" {
		if cfg.Kernel.Kernel, err = layers.ParseKernel(shape.Kernel); err != nil {
			return nil, err
		}
	}
	m, err := transformer.New(cfg, ps)
	if err != nil {
		return nil, err
	}
	opt, err := newAdam(ps, 3e-3)
	if err != nil {
		return nil, err
	}
	model := autodiff.NewModel(ps, m.Builder(), seed)
	if err := model.SetShards(shape.Shards); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed+1, 0))
	batches := make([]map[string]*tensor.Dense, n)
	for i := range batches {
		ids := make([]int, B*T)
		tg := make([]int, B*T)
		for b := range B {
			seq := make([]int, T+1)
			for t := range seq {
				seq[t] = rng.IntN(V)
			}
			copy(ids[b*T:], seq[:T])
			copy(tg[b*T:], seq[1:])
		}
		batches[i] = map[string]*tensor.Dense{
			transformer.InputIDs:     tensor.New(tensor.WithShape(B, T), tensor.WithBacking(ids)),
			transformer.InputTargets: tensor.New(tensor.WithShape(B*T), tensor.WithBacking(tg)),
		}
	}
	return &Workload{
		Name: "charlm", Params: ps, Units: "tokens", PerStep: B * T, FLOPs: LMTrainFLOPs(cfg, B, T),
		Config: map[string]any{"vocab": V, "d_model": cfg.Dim, "heads": cfg.Heads, "layers": cfg.Layers, "d_ff": cfg.FFNWidth(), "context": T, "batch": B, "lr": 3e-3,
			"kernel": cfg.Kernel.String(), "tiling": cfg.Tiling.String(), "random_features": cfg.RandomFeatures,
			"bandwidth": cfg.Bandwidth.String(), "shards": shape.Shards},
		Step: trainStep(model, opt, ps, batches),
	}, nil
}

// trainStep returns a timed train step as train.Loop runs one: zero the gradients,
// forward and backward (Model.ForwardBackward), optimizer step.
func trainStep(model *autodiff.Model, opt optim.Optimizer, ps *autodiff.Params, batches []map[string]*tensor.Dense) func(int) (float64, time.Duration, error) {
	return func(i int) (float64, time.Duration, error) {
		t0 := time.Now()
		ps.ZeroGrad()
		res, err := model.LossAndGrads(batches[i]) // as train.Loop's steps
		if err != nil {
			return 0, 0, err
		}
		fb := time.Since(t0)
		if err := opt.Step(); err != nil {
			return 0, 0, err
		}
		return res.Loss, fb, nil
	}
}

func newAttn(seed uint64, n int, shape Shape) (*Workload, error) {
	const D, H = 128, 8
	B, T := or(shape.Batch, 32), or(shape.SeqLen, 128)
	ps, err := autodiff.NewParams(autodiff.Float32, seed)
	if err != nil {
		return nil, err
	}
	attn, err := layers.NewKernelAttention(ps.Root(), layers.AttentionConfig{Dim: D, Heads: H, Causal: true, Init: layers.InitGPT})
	if err != nil {
		return nil, err
	}
	model := autodiff.NewModel(ps, func(g *autodiff.Graph) (autodiff.Outputs, error) {
		y := attn.Forward(g, g.Input("x"))
		if err := g.Err(); err != nil {
			return autodiff.Outputs{}, err
		}
		return autodiff.Outputs{Loss: g.Sum(y), Batch: &autodiff.Batch{Examples: y.Shape()[0], LossSum: true}}, g.Err()
	}, seed)
	if err := model.SetShards(shape.Shards); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed+1, 0))
	xs := make([]map[string]*tensor.Dense, n)
	for i := range xs {
		x := make([]float32, B*T*D)
		for j := range x {
			x[j] = float32(rng.NormFloat64())
		}
		xs[i] = map[string]*tensor.Dense{"x": tensor.New(tensor.WithShape(B, T, D), tensor.WithBacking(x))}
	}
	both := autodiff.RunMode{Backward: true, InputGrads: true}
	return &Workload{
		Name: "attn", Params: ps, Units: "samples", PerStep: B, FLOPs: AttnFLOPs(D, B, T),
		Config: map[string]any{"d_model": D, "heads": H, "d_head": D / H, "seq": T, "batch": B, "causal": true, "shards": shape.Shards},
		Step: func(i int) (float64, time.Duration, error) {
			t0 := time.Now()
			ps.ZeroGrad()
			res, err := model.Run(xs[i], both)
			if err != nil {
				return 0, 0, err
			}
			return res.Loss, time.Since(t0), nil
		},
		Forward: func(i int) error {
			_, err := model.Run(xs[i], autodiff.RunMode{})
			return err
		},
	}, nil
}

// newDAE times models/dae's reference MLP (dae.DefaultConfig: 784-256-64-256-784, ReLU
// hidden layers, sigmoid output, MSE, Gaussian noise σ = 0.3, PyTorch's nn.Linear
// initialisation) trained with Adam 1e-3 on batches of 128 from dae.NewData, the
// train.Data the DAE trains on. The images are the first batches of the shuffled MNIST
// training set when the GoMNIST module is cached, else U[0,1) images, as the peer script.
func newDAE(seed uint64, n int, shape Shape) (*Workload, error) {
	B := or(shape.Batch, 128)
	ps, err := autodiff.NewParams(autodiff.Float32, seed)
	if err != nil {
		return nil, err
	}
	cfg := dae.DefaultConfig()
	m, err := dae.New(cfg, ps)
	if err != nil {
		return nil, err
	}
	opt, err := newAdam(ps, 1e-3)
	if err != nil {
		return nil, err
	}
	images, source := daeImages(seed+1, n*B)
	if err := m.Net().SetShards(shape.Shards); err != nil {
		return nil, err
	}
	data, err := dae.NewData(m, images, B, seed+1)
	if err != nil {
		return nil, err
	}
	batches := make([]map[string]*tensor.Dense, n)
	for i := range batches {
		b, err := data.Next()
		if err != nil {
			return nil, err
		}
		batches[i] = b.Inputs
	}
	widths := append(append([]int{cfg.In}, cfg.Hidden...), cfg.In)
	return &Workload{
		Name: "dae", Params: ps, Units: "samples", PerStep: B, FLOPs: MLPTrainFLOPs(widths, B),
		Config: map[string]any{"model": "models/dae " + cfg.String(), "layers": widths, "noise_sigma": cfg.Sigma,
			"batch": B, "lr": 1e-3, "images": source, "shards": shape.Shards},
		Step: trainStep(m.Net(), opt, ps, batches),
	}, nil
}

// daeImages returns the MNIST training images, or n U[0,1) images drawn from seed when
// MNIST is not found, and which of the two it is.
func daeImages(seed uint64, n int) (*datasets.Images, string) {
	if dir, err := datasets.DefaultMNISTDir(); err == nil {
		if mnist, err := datasets.LoadMNIST(dir); err == nil {
			return mnist.Train, "MNIST"
		}
	}
	rng := rand.New(rand.NewPCG(seed, 0))
	px := make([]float32, n*784)
	for i := range px {
		px[i] = rng.Float32()
	}
	return &datasets.Images{Pixels: px, Labels: make([]int, n), N: n, Rows: 28, Cols: 28}, "U[0,1)"
}

// Stats summarises step times in milliseconds; percentiles are type 7 (numpy's default
// linear interpolation), as the peer script.
type Stats struct {
	Median float64 `json:"median_ms"`
	P10    float64 `json:"p10_ms"`
	P90    float64 `json:"p90_ms"`
	Mean   float64 `json:"mean_ms"`
	Min    float64 `json:"min_ms"`
	Max    float64 `json:"max_ms"`
	N      int     `json:"n"`
}

// Summarize returns the statistics of durations.
func Summarize(ds []time.Duration) Stats {
	if len(ds) == 0 {
		return Stats{}
	}
	ms := make([]float64, len(ds))
	var sum float64
	for i, d := range ds {
		ms[i] = float64(d) / 1e6
		sum += ms[i]
	}
	slices.Sort(ms)
	r := func(x float64) float64 { return math.Round(x*1e4) / 1e4 }
	return Stats{
		Median: r(Percentile(ms, 50)), P10: r(Percentile(ms, 10)), P90: r(Percentile(ms, 90)),
		Mean: r(sum / float64(len(ms))), Min: r(ms[0]), Max: r(ms[len(ms)-1]), N: len(ms),
	}
}

// Percentile returns the p-th percentile of sorted values with linear interpolation
// between closest ranks (Hyndman & Fan type 7).
func Percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	h := (float64(n) - 1) * p / 100
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return sorted[n-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// Result is one workload's measurement, in the peer script's vocabulary.
type Result struct {
	Workload       string         `json:"workload"`
	Impl           string         `json:"impl"`
	Config         map[string]any `json:"config"`
	Warmup         int            `json:"warmup"`
	NParams        int            `json:"n_params"`
	Step           Stats          `json:"step"`
	FwdBwdMedianMs float64        `json:"fwdbwd_median_ms"`
	OptMedianMs    float64        `json:"opt_median_ms,omitempty"`
	FwdMedianMs    float64        `json:"fwd_median_ms,omitempty"`
	Throughput     float64        `json:"throughput"`
	Units          string         `json:"units"`
	PeakRSSMiB     float64        `json:"peak_rss_mib"`
	// FLOPsPerStep counts a step's matrix products (flops.go); GFLOPS is that over the
	// median step time.
	FLOPsPerStep float64 `json:"flops_per_step"`
	GFLOPS       float64 `json:"gflops"`
	// KVCacheMiB is what the generate workload's key/value cache holds (or the
	// recurrent state, with random features).
	KVCacheMiB    float64 `json:"kv_cache_mib,omitempty"`
	AllocsPerStep float64 `json:"allocs_per_step"`
	BytesPerStep  float64 `json:"alloc_bytes_per_step"`
	LossFirst     float64 `json:"loss_first"`
	LossLast      float64 `json:"loss_last"`
	TimedWallS    float64 `json:"timed_wall_s"`
	OtherCPUCores float64 `json:"other_cpu_cores"`
	OwnCPUCores   float64 `json:"own_cpu_cores"`
	// CPUMsPerStep is this process's CPU time (user + system) per timed step: a
	// contention-proof measure of the work done.
	CPUMsPerStep float64 `json:"cpu_ms_per_step"`
	GOMAXPROCS   int     `json:"gomaxprocs"`
	GoVersion    string  `json:"go"`
	// CPU is the code path the kernels ran (simd's level: avx512, avx2 or generic;
	// LOCUS_CPU chooses a lower one).
	CPU simd.Level `json:"cpu"`
}

// Run runs warmup untimed and steps timed iterations of w (which must have been prepared
// for at least warmup+steps iterations) and, for workloads with a forward-only pass, as
// many forward passes.
func Run(w *Workload, warmup, steps int) (*Result, error) {
	res := &Result{Workload: w.Name, Impl: "locus", Config: w.Config, Warmup: warmup, NParams: w.Params.NumElements(),
		Units: w.Units, GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version(), CPU: simd.Current()}
	var losses []float64
	var steptimes, fb, opt []time.Duration
	var ms0, ms1 runtime.MemStats
	var mon loadMonitor
	for i := range warmup + steps {
		if i == warmup {
			runtime.GC()
			runtime.ReadMemStats(&ms0)
			mon.start()
		}
		t0 := time.Now()
		loss, fwdBwd, err := w.Step(i)
		d := time.Since(t0)
		if err != nil {
			return nil, fmt.Errorf("%s step %d: %w", w.Name, i, err)
		}
		losses = append(losses, loss)
		if i >= warmup {
			steptimes = append(steptimes, d)
			fb = append(fb, fwdBwd)
			opt = append(opt, d-fwdBwd)
		}
	}
	wall, own, other := mon.stop()
	runtime.ReadMemStats(&ms1)
	res.Step = Summarize(steptimes)
	res.FwdBwdMedianMs = Summarize(fb).Median
	if w.Name != "attn" && w.Name != "generate" {
		res.OptMedianMs = Summarize(opt).Median
	}
	res.TimedWallS = math.Round(wall*1e3) / 1e3
	res.OwnCPUCores = math.Round(own*1e3) / 1e3
	res.OtherCPUCores = math.Round(other*1e3) / 1e3
	res.CPUMsPerStep = round4(own * wall * 1e3 / float64(steps))
	res.AllocsPerStep = float64(ms1.Mallocs-ms0.Mallocs) / float64(steps)
	res.BytesPerStep = float64(ms1.TotalAlloc-ms0.TotalAlloc) / float64(steps)
	res.LossFirst = round4(losses[0])
	res.LossLast = round4(losses[len(losses)-1])
	if res.Step.Median > 0 {
		res.Throughput = math.Round(float64(w.PerStep)/(res.Step.Median/1e3)*10) / 10
		res.GFLOPS = math.Round(w.FLOPs/(res.Step.Median/1e3)/1e9*100) / 100
	}
	res.FLOPsPerStep = w.FLOPs
	if w.CacheBytes != nil {
		res.KVCacheMiB = math.Round(float64(w.CacheBytes())/(1<<20)*1000) / 1000
	}
	if w.Forward != nil {
		var fw []time.Duration
		for i := range warmup + steps {
			t0 := time.Now()
			if err := w.Forward(i); err != nil {
				return nil, fmt.Errorf("%s forward %d: %w", w.Name, i, err)
			}
			if i >= warmup {
				fw = append(fw, time.Since(t0))
			}
		}
		res.FwdMedianMs = Summarize(fw).Median
	}
	res.PeakRSSMiB = PeakRSSMiB()
	return res, nil
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// PeakRSSMiB returns the process's peak resident set size (getrusage ru_maxrss) in MiB.
func PeakRSSMiB() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return math.NaN()
	}
	return math.Round(float64(ru.Maxrss)/1024*10) / 10 // KiB on Linux
}

// loadMonitor measures, as the peer script, how many cores other processes used during
// the timed window: (all-CPU busy time − this process's CPU time) / wall time.
type loadMonitor struct {
	t0    time.Time
	busy0 float64
	own0  float64
}

const clkTck = 100 // USER_HZ on Linux

func busySeconds() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return math.NaN()
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 {
		return math.NaN()
	}
	var v [8]float64
	for i := range v {
		v[i], _ = strconv.ParseFloat(f[i+1], 64)
	}
	total := v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7]
	return (total - v[3] - v[4]) / clkTck
}

func ownSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return math.NaN()
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func (m *loadMonitor) start() {
	m.t0, m.busy0, m.own0 = time.Now(), busySeconds(), ownSeconds()
}

func (m *loadMonitor) stop() (wall, ownCores, otherCores float64) {
	wall = time.Since(m.t0).Seconds()
	own := ownSeconds() - m.own0
	busy := busySeconds() - m.busy0
	if wall <= 0 {
		return wall, math.NaN(), math.NaN()
	}
	return wall, own / wall, max(0, (busy-own)/wall)
}
