package transformer

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/internal/ortrun"
	"github.com/locusml/locus/layers"
	"github.com/locusml/locus/onnx"
	"gorgonia.org/tensor"
)

// onnxTolerance is the largest difference allowed between onnxruntime's and Locus's
// float32 outputs.
const onnxTolerance = 1e-4

// perturb moves every parameter by N(0, scale²), so that zero-initialised tables
// (relative biases, mixture logits) and initial bandwidths take general values.
func perturb(ps *autodiff.Params, seed uint64, scale float64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	for _, p := range ps.List() {
		for i := range p.Size() {
			p.SetAt(i, p.At(i)+scale*rng.NormFloat64())
		}
	}
}

// writeONNX exports e to a file in dir.
func writeONNX(t *testing.T, e onnx.Exporter, dir string) string {
	t.Helper()
	m, err := e.ExportONNX()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "model.onnx")
	if err := onnx.WriteFile(path, m); err != nil {
		t.Fatal(err)
	}
	return path
}

func randIDs(rng *rand.Rand, vocab, n int) ([]int, []int64) {
	ids := make([]int, n)
	ids64 := make([]int64, n)
	for i := range ids {
		ids[i] = rng.IntN(vocab)
		ids64[i] = int64(ids[i])
	}
	return ids, ids64
}

func maxAbsDiff(t *testing.T, got, want []float32) float64 {
	t.Helper()
	d, err := ortrun.MaxAbsDiff(got, want)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// onnxCases are the configurations the export must reproduce: every kernel form and
// combinator, every bandwidth mode, the position encodings, post-LN, the three
// architectures.
func onnxCases() map[string]func(*Config) {
	kernel := func(arch Arch, spec string, bw layers.BandwidthMode) func(*Config) {
		return func(c *Config) {
			c.Arch, c.Kernel, c.Bandwidth = arch, layers.MustParseKernelSpec(spec), bw
		}
	}
	cases := map[string]func(*Config){
		"lm/standard":   func(*Config) {},
		"lm/sinusoidal": func(c *Config) { c.Positions = layers.PositionsSinusoidal },
		"lm/rotary":     func(c *Config) { c.Positions = layers.PositionsRotary },
		"lm/none-distance": func(c *Config) {
			c.Positions, c.Kernel = layers.PositionsNone, layers.MustParseKernelSpec("exponential * distance(0.5)")
		},
		"lm/postln": func(c *Config) { c.PostLN = true },
		"lm/tied-gelu-exact": func(c *Config) {
			c.Tied, c.Activation = true, layers.GELUExact
		},
		"lm/nanogpt-tied-nobias-gelu-gpt2": func(c *Config) {
			c.Tied, c.NoBias, c.Activation, c.Init = true, true, layers.GELUExact, layers.InitGPT2
		},
		"encdec/nobias-postln": func(c *Config) { c.Arch, c.NoBias, c.PostLN = ArchEncDec, true, true },
		"lm/relu-rotary-postln-knn-gaussian": func(c *Config) {
			c.Activation, c.Positions, c.PostLN = layers.ReLU, layers.PositionsRotary, true
			c.Kernel, c.Bandwidth = layers.MustParseKernelSpec("gaussian"), layers.BandwidthKNN
		},
		"encoder/gaussian-head":                     kernel(ArchEncoder, "gaussian", layers.BandwidthHead),
		"encoder/window-query":                      kernel(ArchEncoder, "laplacian * window(3)", layers.BandwidthQuery),
		"encdec/standard":                           kernel(ArchEncDec, "exponential", layers.BandwidthFixed),
		"encdec/relbias-knn":                        kernel(ArchEncDec, "laplacian * relbias(3)", layers.BandwidthKNN),
		"encdec/mixture-layer-rotary-postln-sinus":  kernel(ArchEncDec, "mixture(exponential, cauchy) * distance(0.2)", layers.BandwidthLayer),
		"encoder/product-mixture-relbias-distance":  kernel(ArchEncoder, "mixture(cauchy, epanechnikov) * relbias(2) * distance(0.3)", layers.BandwidthHead),
		"lm/window-only":                            kernel(ArchLM, "window(3)", layers.BandwidthFixed),
		"lm/causal-window-product":                  kernel(ArchLM, "product(tricube, causal, window(4))", layers.BandwidthQuery),
		"encoder/knn-epanechnikov":                  kernel(ArchEncoder, "epanechnikov", layers.BandwidthKNN),
		"encdec/tricube-head":                       kernel(ArchEncDec, "tricube", layers.BandwidthHead),
		"lm/mixture-of-all":                         kernel(ArchLM, "mixture(exponential, gaussian, laplacian, cauchy, epanechnikov, tricube)", layers.BandwidthHead),
		"encoder/uniform-exponent-distance-relbias": kernel(ArchEncoder, "distance(0.5) * relbias(1)", layers.BandwidthFixed),
	}
	for _, k := range layers.KernelNames() { // every registered form, by its example
		for _, f := range layers.KernelForms() {
			if f.Name == k {
				for _, bw := range layers.BandwidthModeNames() {
					var mode layers.BandwidthMode
					_ = mode.UnmarshalText([]byte(bw))
					if p, ok := layers.MustParseKernelSpec(f.Example).Value().(layers.Product); ok && mode != layers.BandwidthFixed && mode != layers.BandwidthKNN {
						if _, uniform := p.Content.(layers.Uniform); uniform {
							continue // no bandwidth to learn
						}
					}
					if k == "uniform" && mode != layers.BandwidthFixed && mode != layers.BandwidthKNN {
						continue
					}
					cases["lm/"+k+"/"+bw] = kernel(ArchLM, f.Example, mode)
				}
			}
		}
	}
	cases["encdec/mixture-layer-rotary-postln-sinus"] = func(c *Config) {
		kernel(ArchEncDec, "mixture(exponential, cauchy) * distance(0.2)", layers.BandwidthLayer)(c)
		c.PostLN = true
	}
	return cases
}

// TestONNXMatchesLocus exports every case, runs the files in onnxruntime (one process
// for all) and compares the logits with Locus's on the same ids.
func TestONNXMatchesLocus(t *testing.T) {
	ortrun.SkipIfMissing(t)
	type export struct {
		name  string
		cfg   Config
		want  []float32
		shape []int
	}
	var exports []export
	var jobs []ortrun.Job
	dir := t.TempDir()
	cases := onnxCases()
	names := make([]string, 0, len(cases))
	for name := range cases {
		names = append(names, name)
	}
	sort.Strings(names)
	for i, name := range names {
		ps, err := autodiff.NewParams(autodiff.Float32, 5)
		if err != nil {
			t.Fatal(err)
		}
		cfg := DefaultConfig(ArchLM, 11, 16)
		cfg.Dim, cfg.Heads, cfg.Layers, cfg.Hidden = 16, 2, 2, 24
		cases[name](&cfg)
		m, err := New(cfg, ps)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		perturb(ps, 9, 0.2)
		sub := filepath.Join(dir, fmt.Sprint(i))
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		path := writeONNX(t, m, sub)
		rng := rand.New(rand.NewPCG(3, uint64(i)))
		const b, tq, ts = 2, 7, 5
		ids, ids64 := randIDs(rng, cfg.Vocab, b*tq)
		inputs := map[string]*tensor.Dense{InputIDs: intTensor([]int{b, tq}, ids...)}
		feeds := map[string]ortrun.Tensor{ONNXInputIDs: {Dims: []int{b, tq}, Ints: ids64}}
		if cfg.Arch == ArchEncDec {
			src, src64 := randIDs(rng, cfg.Vocab, b*ts)
			inputs[InputSource] = intTensor([]int{b, ts}, src...)
			feeds[ONNXInputSource] = ortrun.Tensor{Dims: []int{b, ts}, Ints: src64}
		}
		res, err := autodiff.NewModel(ps, m.Builder(), 1).Forward(inputs)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		exports = append(exports, export{name: name, cfg: cfg, want: res.Values[OutputLogits].Data().([]float32), shape: []int{b, tq, cfg.Vocab}})
		jobs = append(jobs, ortrun.Job{Model: path, Inputs: feeds})
	}
	paths := make([]string, len(jobs))
	for i, j := range jobs {
		paths[i] = j.Model
	}
	ortrun.CheckFiles(t, paths...)
	results, err := ortrun.RunBatch(jobs)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range exports {
		t.Run(e.name, func(t *testing.T) {
			if results[i].Err != nil {
				t.Fatal(results[i].Err)
			}
			got := results[i].Outputs[ONNXOutputLogits]
			if fmt.Sprint(got.Dims) != fmt.Sprint(e.shape) {
				t.Fatalf("onnxruntime logits %v, want %v", got.Dims, e.shape)
			}
			d := maxAbsDiff(t, got.Floats, e.want)
			t.Logf("%s %s bandwidth=%s positions=%s post_ln=%v: max |onnxruntime − Locus| = %.2e",
				e.cfg.Arch, e.cfg.Kernel, e.cfg.Bandwidth, e.cfg.Positions, e.cfg.PostLN, d)
			if d > onnxTolerance {
				t.Errorf("max |onnxruntime − Locus| = %.3g > %g", d, onnxTolerance)
			}
		})
	}
}
