package dae

import (
	"context"
	"fmt"
	"github.com/locusml/locus/layers"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/optim"
	"github.com/locusml/locus/train"
	"gorgonia.org/tensor"
)

func randImages(rng *rand.Rand, n, d int) []float64 {
	v := make([]float64, n*d)
	for i := range v {
		v[i] = rng.Float64()
	}
	return v
}

// checkBuilder gradient-checks the model of cfg (float64) on a random batch, with
// respect to every parameter and both inputs.
func checkBuilder(t *testing.T, cfg Config, batch int) {
	t.Helper()
	ps, err := autodiff.NewParams(autodiff.Float64, 3)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(cfg, ps)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	inputs := map[string]*tensor.Dense{
		"noisy": tensor.New(tensor.WithShape(batch, cfg.In), tensor.WithBacking(randImages(rng, batch, cfg.In))),
		"clean": tensor.New(tensor.WithShape(batch, cfg.In), tensor.WithBacking(randImages(rng, batch, cfg.In))),
	}
	worst, err := autodiff.CheckGradients(autodiff.NewModel(ps, m.Builder(), 1), inputs,
		autodiff.GradCheck{Inputs: true, RTol: 1e-5, ATol: 1e-9})
	if err != nil {
		t.Fatalf("%s: %v", cfg, err)
	}
	if worst.CheckedValues == 0 {
		t.Fatalf("%s: nothing checked", cfg)
	}
	t.Logf("%s: %d values, worst %s[%d] rel err %.2g", cfg, worst.CheckedValues, worst.Tensor, worst.Index, worst.RelErr)
}

func TestGradientsMLP(t *testing.T) {
	checkBuilder(t, Config{Kind: KindMLP, In: 6, Hidden: []int{5, 3, 4}, Noise: NoiseGaussian, Sigma: 0.3}, 4)
}

func TestGradientsLocalized(t *testing.T) {
	for _, kernel := range []string{"gaussian", "exponential", "mixture(cauchy, laplacian)", "epanechnikov * relbias(2)"} {
		t.Run(kernel, func(t *testing.T) {
			spec := layers.MustParseKernelSpec(kernel)
			checkBuilder(t, Config{Kind: KindLocalized, In: 6, Levels: 2, Prototypes: 5, Heads: 2, Width: 4,
				Kernel: &spec, InitBandwidth: 0.7, MinBandwidth: 0.05, Noise: NoiseGaussian, Sigma: 0.3}, 3)
		})
	}
}

func TestParamNames(t *testing.T) {
	ps, _ := autodiff.NewParams(autodiff.Float32, 1)
	if _, err := New(DefaultConfig(), ps); err != nil {
		t.Fatal(err)
	}
	want := map[string][]int{
		"enc.0.weight": {256, 784}, "enc.0.bias": {256},
		"enc.1.weight": {64, 256}, "enc.1.bias": {64},
		"dec.0.weight": {256, 64}, "dec.0.bias": {256},
		"dec.1.weight": {784, 256}, "dec.1.bias": {784},
	}
	fanIn := map[string]int{"enc.0": 784, "enc.1": 256, "dec.0": 64, "dec.1": 256}
	got := map[string][]int{}
	for _, p := range ps.List() {
		got[p.Name()] = p.Shape()
		// PyTorch's default nn.Linear init, weight and bias: U(±1/sqrt(fan_in)).
		bound := 1 / math.Sqrt(float64(fanIn[p.Name()[:5]]))
		for i := range p.Size() {
			if v := p.At(i); math.Abs(v) > bound {
				t.Fatalf("%s[%d] = %g outside ±%g", p.Name(), i, v, bound)
			}
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parameters %v, want %v", got, want)
	}
	// 784·256+256 + 256·64+64 + 64·256+256 + 256·784+784 = 435,536 parameters.
	if n := ps.NumElements(); n != 435536 {
		t.Fatalf("%d parameters, want 435536", n)
	}
}

func TestLocalizedBandwidths(t *testing.T) {
	ps, _ := autodiff.NewParams(autodiff.Float32, 1)
	cfg := DefaultLocalizedConfig()
	m, err := New(cfg, ps)
	if err != nil {
		t.Fatal(err)
	}
	hs := m.Bandwidths()
	if len(hs) != cfg.Levels || len(hs[0]) != cfg.Heads {
		t.Fatalf("bandwidths %v, want %d levels of %d heads", hs, cfg.Levels, cfg.Heads)
	}
	if math.Abs(hs[0][0]-cfg.InitBandwidth) > 1e-6 {
		t.Fatalf("initial bandwidth %g, want %g", hs[0][0], cfg.InitBandwidth)
	}
}

func TestConfigValidate(t *testing.T) {
	bad := []Config{
		{},
		func() Config { c := DefaultConfig(); c.Kind = "vae"; return c }(),
		func() Config { c := DefaultConfig(); c.Noise = "gauss"; return c }(),
		func() Config { c := DefaultConfig(); c.Hidden = nil; return c }(),
		func() Config { c := DefaultLocalizedConfig(); c.Width = 6; return c }(),
		func() Config { c := DefaultLocalizedConfig(); c.MinBandwidth = 2; return c }(),
		func() Config { c := DefaultLocalizedConfig(); c.InitBandwidth = 0; return c }(),
		func() Config { c := DefaultConfig(); c.Noise, c.Sigma = NoiseMask, 1.5; return c }(),
	}
	for i, c := range bad {
		if c.Validate() == nil {
			t.Errorf("config %d (%s) validated", i, c)
		}
	}
	// A nil Kernel means gaussian and a zero MinBandwidth 1e-3 (the zero convention).
	zeros := DefaultLocalizedConfig()
	zeros.Kernel, zeros.MinBandwidth = nil, 0
	for _, c := range []Config{DefaultConfig(), DefaultLocalizedConfig(), zeros} {
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", c, err)
		}
	}
}

func TestCorruptionStatistics(t *testing.T) {
	const n = 200000
	clean := make([]float32, n)
	for i := range clean {
		clean[i] = 0.5
	}
	noisy := make([]float32, n)
	rng := rand.New(rand.NewPCG(1, 2))

	Gaussian{Sigma: 0.3}.Corrupt(noisy, clean, rng)
	var s, s2 float64
	for i, v := range noisy {
		e := float64(v - clean[i])
		s += e
		s2 += e * e
	}
	mean, std := s/n, math.Sqrt(s2/n-(s/n)*(s/n))
	// Standard errors: 0.3/sqrt(n) = 6.7e-4 for the mean, 0.3/sqrt(2n) = 4.7e-4 for the std.
	if math.Abs(mean) > 4e-3 || math.Abs(std-0.3) > 3e-3 {
		t.Errorf("gaussian noise: mean %g std %g, want 0 and 0.3", mean, std)
	}

	Masking{Fraction: 0.25}.Corrupt(noisy, clean, rng)
	zeros := 0
	for i, v := range noisy {
		switch v {
		case 0:
			zeros++
		case clean[i]:
		default:
			t.Fatalf("masking changed %g to %g", clean[i], v)
		}
	}
	// Standard error sqrt(p(1−p)/n) = 9.7e-4.
	if f := float64(zeros) / n; math.Abs(f-0.25) > 5e-3 {
		t.Errorf("masking: fraction %g, want 0.25", f)
	}

	SaltPepper{Fraction: 0.2}.Corrupt(noisy, clean, rng)
	var salt, pepper int
	for i, v := range noisy {
		switch v {
		case 0:
			pepper++
		case 1:
			salt++
		case clean[i]:
		default:
			t.Fatalf("salt-and-pepper changed %g to %g", clean[i], v)
		}
	}
	if f := float64(salt+pepper) / n; math.Abs(f-0.2) > 5e-3 {
		t.Errorf("salt-and-pepper: fraction %g, want 0.2", f)
	}
	if f := float64(salt) / float64(salt+pepper); math.Abs(f-0.5) > 0.02 {
		t.Errorf("salt-and-pepper: salt share %g, want 0.5", f)
	}

	// Equal seeds give equal noise.
	a, b := make([]float32, 100), make([]float32, 100)
	Gaussian{Sigma: 1}.Corrupt(a, clean[:100], rand.New(rand.NewPCG(9, 9)))
	Gaussian{Sigma: 1}.Corrupt(b, clean[:100], rand.New(rand.NewPCG(9, 9)))
	if !reflect.DeepEqual(a, b) {
		t.Error("gaussian noise is not reproducible from its seed")
	}
}

// lazyDirect is E[z|x] computed from the definition, in float64, with the Gaussian
// densities normalised by their largest value.
func lazyDirect(train []float32, dim int, sigma float64, x []float32) []float64 {
	n := len(train) / dim
	logp := make([]float64, n)
	best := math.Inf(-1)
	for i := range n {
		var d2 float64
		for j := range dim {
			e := float64(x[j]) - float64(train[i*dim+j])
			d2 += e * e
		}
		logp[i] = -d2 / (2 * sigma * sigma)
		best = max(best, logp[i])
	}
	out := make([]float64, dim)
	var z float64
	for i := range n {
		w := math.Exp(logp[i] - best)
		z += w
		for j := range dim {
			out[j] += w * float64(train[i*dim+j])
		}
	}
	for j := range out {
		out[j] /= z
	}
	return out
}

func TestLazyMatchesDirect(t *testing.T) {
	const n, dim, nq = 300, 9, 150 // 150 queries: three blocks, the last one partial
	rng := rand.New(rand.NewPCG(3, 4))
	train := make([]float32, n*dim)
	for i := range train {
		train[i] = float32(rng.Float64())
	}
	queries := make([]float32, nq*dim)
	Gaussian{Sigma: 0.3}.Corrupt(queries, train[:nq*dim], rng)
	for _, sigma := range []float64{0.05, 0.3, 1, 10} {
		l, err := NewLazy(train, dim, sigma)
		if err != nil {
			t.Fatal(err)
		}
		l.Workers = 2
		got := make([]float32, len(queries))
		if err := l.Denoise(got, queries); err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for q := range nq {
			want := lazyDirect(train, dim, sigma, queries[q*dim:(q+1)*dim])
			for j, w := range want {
				worst = max(worst, math.Abs(float64(got[q*dim+j])-w))
			}
		}
		// float32 dot products: log-weight errors ~1e-7·‖x‖²/σ², amplified at small σ.
		if worst > 2e-4 {
			t.Errorf("sigma %g: max abs difference %g from the direct computation", sigma, worst)
		}
	}
}

func TestLazyLimits(t *testing.T) {
	// Tiny σ gives the nearest training point; huge σ gives the training mean.
	train := []float32{0, 0, 1, 0, 0, 1, 1, 1}
	x := []float32{0.9, 0.2}
	l, _ := NewLazy(train, 2, 1e-3)
	got := make([]float32, 2)
	if err := l.Denoise(got, x); err != nil {
		t.Fatal(err)
	}
	if got[0] != 1 || got[1] != 0 {
		t.Errorf("sigma→0: %v, want the nearest point [1 0]", got)
	}
	l, _ = NewLazy(train, 2, 1e4)
	if err := l.Denoise(got, x); err != nil {
		t.Fatal(err)
	}
	if math.Abs(float64(got[0])-0.5) > 1e-6 || math.Abs(float64(got[1])-0.5) > 1e-6 {
		t.Errorf("sigma→∞: %v, want the mean [0.5 0.5]", got)
	}
	if _, err := NewLazy(train, 3, 1); err == nil {
		t.Error("NewLazy accepted 8 values of dim 3")
	}
	if _, err := NewLazy(train, 2, 0); err == nil {
		t.Error("NewLazy accepted sigma 0")
	}
}

func TestWriteGrid(t *testing.T) {
	var clean, noisy, den [][]float32
	for k := range 5 {
		im := make([]float32, 16)
		for i := range im {
			im[i] = float32(k+i) / 20
		}
		clean, noisy, den = append(clean, im), append(noisy, im), append(den, im)
	}
	path := filepath.Join(t.TempDir(), "grid.png")
	if err := WriteGrid(path, clean, noisy, den, 2); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	// 3 columns of 4·2+2 pixels plus 2; 2 bands of 3·10+6 plus 2.
	if b := img.Bounds(); b.Dx() != 32 || b.Dy() != 74 {
		t.Errorf("grid is %v, want 32×74", b)
	}
	if err := WriteGrid(path, clean, noisy[:4], den, 2); err == nil {
		t.Error("WriteGrid accepted unequal sets")
	}
}

// TestTrainMNIST trains the reference MLP DAE with train.Loop on the first 2000 MNIST
// training images for 300 steps of batch 64 and checks the clean- and noisy-input MSE on
// the first 1000 test images.
func TestTrainMNIST(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	dir, err := datasets.DefaultMNISTDir()
	if err != nil {
		t.Skip(err)
	}
	mnist, err := datasets.LoadMNIST(dir)
	if err != nil {
		t.Skip(err)
	}
	ps, _ := autodiff.NewParams(autodiff.Float32, 0)
	m, err := New(DefaultConfig(), ps)
	if err != nil {
		t.Fatal(err)
	}
	first := *mnist.Train
	first.N, first.Pixels, first.Labels = 2000, first.Pixels[:2000*784], first.Labels[:2000]
	data, err := NewData(m, &first, 64, 1)
	if err != nil {
		t.Fatal(err)
	}
	opt, err := optim.NewAdam(optim.All(ps.List()), optim.DefaultAdamConfig())
	if err != nil {
		t.Fatal(err)
	}
	test := mnist.Test.Pixels[:1000*784]
	loop := &train.Loop{Model: m.Net(), Optimizer: opt, Data: data, Steps: 300,
		Eval: func(ctx context.Context) (train.Metrics, error) {
			return Metrics(ctx, m, test, Gaussian{Sigma: 0.3}, 2)
		}}
	sum, err := loop.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	clean, noisy := sum.Eval[MetricMSEClean], sum.Eval[MetricMSENoisy]
	t.Logf("after %d steps: clean-input MSE %.5f, noisy-input MSE %.5f", sum.Step, clean, noisy)
	// Measured on a 2-core machine: clean 0.0324, noisy 0.0337 in about 2.5 s (the
	// training-mean image scores 0.0675, the untrained model 0.232).
	if clean > 0.045 || noisy > 0.045 {
		t.Errorf("clean MSE %.4f, noisy MSE %.4f: want both below 0.045", clean, noisy)
	}
}

// localizedDirect computes the localized DAE's output for one input from the
// definitions, in plain float64 loops over the parameters.
func localizedDirect(ps *autodiff.Params, cfg Config, x []float64) []float64 {
	lin := func(name string, in []float64) []float64 {
		w, b := ps.Get(name+".weight"), ps.Get(name+".bias")
		out := make([]float64, b.Size())
		for j := range out {
			out[j] = b.At(j)
			for i, v := range in {
				out[j] += v * w.At(j*len(in)+i) // weight [out, in]
			}
		}
		return out
	}
	relu := func(v []float64) []float64 {
		for i := range v {
			v[i] = max(v[i], 0)
		}
		return v
	}
	h := relu(lin("enc", x))
	dh := cfg.Width / cfg.Heads
	for l := range cfg.Levels {
		pre := fmt.Sprintf("level.%d", l)
		mem := ps.Get(pre + ".memory")
		var keys, vals [][]float64
		for p := range cfg.Prototypes {
			row := make([]float64, cfg.Width)
			for j := range row {
				row[j] = mem.At(p*cfg.Width + j)
			}
			keys = append(keys, lin(pre+".attn.k", row))
			vals = append(vals, lin(pre+".attn.v", row))
		}
		q := lin(pre+".attn.q", h)
		rho := ps.Get(pre + ".attn.bandwidth.rho")
		merged := make([]float64, cfg.Width)
		for hd := range cfg.Heads {
			bw := math.Log1p(math.Exp(rho.At(hd))) + cfg.MinBandwidth
			s := make([]float64, cfg.Prototypes)
			for p := range cfg.Prototypes {
				var d2, dot float64
				for j := hd * dh; j < (hd+1)*dh; j++ {
					d2 += (q[j] - keys[p][j]) * (q[j] - keys[p][j])
					dot += q[j] * keys[p][j]
				}
				if cfg.Kernel.String() == "gaussian" {
					s[p] = -d2 / (2 * bw * bw)
				} else {
					s[p] = dot / bw
				}
			}
			var z float64
			for _, v := range s {
				z += math.Exp(v)
			}
			for p, v := range s {
				for j := hd * dh; j < (hd+1)*dh; j++ {
					merged[j] += math.Exp(v) / z * vals[p][j]
				}
			}
		}
		a := lin(pre+".attn.o", merged)
		for i := range a {
			a[i] += h[i]
		}
		h = relu(lin(pre+".map", a))
	}
	out := lin("dec", h)
	for i, v := range out {
		out[i] = 1 / (1 + math.Exp(-v))
	}
	return out
}

func TestLocalizedForward(t *testing.T) {
	for _, kernel := range []string{"gaussian", "exponential"} {
		spec := layers.MustParseKernelSpec(kernel)
		cfg := Config{Kind: KindLocalized, In: 5, Levels: 2, Prototypes: 4, Heads: 2, Width: 6,
			Kernel: &spec, InitBandwidth: 0.5, MinBandwidth: 0.1, Noise: NoiseGaussian, Sigma: 0.3}
		ps, _ := autodiff.NewParams(autodiff.Float64, 8)
		m, err := New(cfg, ps)
		if err != nil {
			t.Fatal(err)
		}
		// Distinct bandwidths per head and level.
		ps.Get("level.0.attn.bandwidth.rho").SetAt(1, -1)
		ps.Get("level.1.attn.bandwidth.rho").SetAt(0, 2)
		rng := rand.New(rand.NewPCG(1, 1))
		x := make([]float32, 3*cfg.In)
		for i := range x {
			x[i] = float32(rng.Float64())
		}
		got := make([]float32, len(x))
		if err := m.Denoise(got, x); err != nil {
			t.Fatal(err)
		}
		for r := range 3 {
			in := make([]float64, cfg.In)
			for i := range in {
				in[i] = float64(x[r*cfg.In+i])
			}
			for j, w := range localizedDirect(ps, cfg, in) {
				if d := math.Abs(float64(got[r*cfg.In+j]) - w); d > 1e-6 {
					t.Fatalf("%s: row %d[%d] = %g, direct %g", kernel, r, j, got[r*cfg.In+j], w)
				}
			}
		}
	}
}

// TestZeroFieldsMeanDefaults builds an ldae with a nil Kernel and a zero MinBandwidth:
// the model is that of gaussian and 1e-3, and its Config says so.
func TestZeroFieldsMeanDefaults(t *testing.T) {
	cfg := DefaultLocalizedConfig()
	cfg.Levels, cfg.Prototypes, cfg.Width, cfg.In = 1, 4, 8, 6
	cfg.Kernel, cfg.MinBandwidth = nil, 0
	ps, err := autodiff.NewParams(autodiff.Float32, 1)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(cfg, ps)
	if err != nil {
		t.Fatal(err)
	}
	got := m.Config()
	if got.Kernel == nil || got.Kernel.String() != "gaussian" || got.MinBandwidth != 1e-3 {
		t.Errorf("Config() kernel %v, min bandwidth %v; want gaussian and 0.001", got.Kernel, got.MinBandwidth)
	}
}
