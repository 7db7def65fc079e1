package transformer

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/layers"
)

// decodeCases are the samplings compared between cached and uncached decoding.
var decodeCases = []struct {
	name string
	s    Sampling
}{
	{"greedy", Sampling{}},
	{"temperature", Sampling{Temperature: 1}},
	{"topk", Sampling{Temperature: 0.8, TopK: 3}},
	{"topp", Sampling{Temperature: 1.2, TopP: 0.9}},
}

func newTestModel(t *testing.T, cfg Config) (*Model, *autodiff.Model) {
	t.Helper()
	ps, err := autodiff.NewParams(autodiff.Float64, 7)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(cfg, ps)
	if err != nil {
		t.Fatal(err)
	}
	return m, autodiff.NewModel(ps, m.Builder(), 1)
}

// decodeConfigs are the LM configurations (changes to a small default) that cached
// decoding is checked on: each position type and a few kernels, bandwidth modes, post-LN.
var decodeConfigs = []struct {
	name string
	mut  func(*Config)
}{
	{"learned", nil},
	{"sinusoidal", func(c *Config) { c.Positions = layers.PositionsSinusoidal }},
	{"rotary", func(c *Config) { c.Positions = layers.PositionsRotary }},
	{"gaussian_query_postln", func(c *Config) {
		c.Kernel, c.Bandwidth, c.PostLN = layers.MustParseKernelSpec("gaussian"), layers.BandwidthQuery, true
	}},
	{"laplacian_knn_rotary", func(c *Config) {
		c.Kernel, c.Bandwidth, c.Positions = layers.MustParseKernelSpec("laplacian"), layers.BandwidthKNN, layers.PositionsRotary
	}},
	{"head_bandwidth_tied", func(c *Config) { c.Bandwidth, c.Tied, c.Init = layers.BandwidthHead, true, layers.InitGPT }},
	// Kernels of the query–key distance, which the fixed-size cache's right-aligned
	// slots must keep true (WindowStepBuilder).
	{"window_distance", func(c *Config) { c.Kernel = layers.MustParseKernelSpec("exponential * window(3) * distance(0.5)") }},
	{"relbias_rotary", func(c *Config) {
		c.Kernel, c.Positions = layers.MustParseKernelSpec("gaussian * relbias(2)"), layers.PositionsRotary
	}},
	// The tiled local mean, which long caches (2048 keys and more) run on.
	{"tiled", func(c *Config) { c.Tiling = layers.TilingAlways }},
}

// newDecodeModel is the small LM of the decoding tests (d 16, 2 heads, 2 layers, MaxLen
// 8) with mut applied, and its Generator.
func newDecodeModel(t *testing.T, mut func(*Config)) (*Model, *autodiff.Model, *Generator) {
	t.Helper()
	cfg := DefaultConfig(ArchLM, 7, 8)
	cfg.Dim, cfg.Heads, cfg.Layers, cfg.Hidden, cfg.Init = 16, 2, 2, 24, layers.InitTorch
	if mut != nil {
		mut(&cfg)
	}
	m, am := newTestModel(t, cfg)
	gen, err := NewGenerator(m)
	if err != nil {
		t.Fatal(err)
	}
	return m, am, gen
}

// TestCachedGenerateMatches decodes with and without the key/value cache and requires the
// same tokens, for each position type and a few kernels, greedy and seeded sampling. The
// sequences run past MaxLen, so the sliding window is covered too.
func TestCachedGenerateMatches(t *testing.T) {
	for _, tc := range decodeConfigs {
		t.Run(tc.name, func(t *testing.T) {
			m, am, gen := newDecodeModel(t, tc.mut)
			cfg := m.Config
			prompt := []int{3, 1, 4}
			for _, dc := range decodeCases {
				want, err := Generate(am, cfg, prompt, 12, dc.s, -1, rand.New(rand.NewPCG(5, 6)))
				if err != nil {
					t.Fatal(err)
				}
				got, err := gen.Generate(nil, prompt, 12, dc.s, -1, rand.New(rand.NewPCG(5, 6)))
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s: cached %v, uncached %v", dc.name, got, want)
				}
				t.Logf("%s: %v", dc.name, got)
			}
		})
	}
}

// TestCachedGenerateEncDec compares cached and uncached decoding of an encoder–decoder.
func TestCachedGenerateEncDec(t *testing.T) {
	for _, pos := range []layers.PositionEncoding{layers.PositionsLearned, layers.PositionsRotary} {
		t.Run(pos.String(), func(t *testing.T) {
			cfg := DefaultConfig(ArchEncDec, 7, 8)
			cfg.Dim, cfg.Heads, cfg.Layers, cfg.Hidden, cfg.Init, cfg.Positions = 16, 2, 2, 24, layers.InitTorch, pos
			m, am := newTestModel(t, cfg)
			gen, err := NewGenerator(m)
			if err != nil {
				t.Fatal(err)
			}
			src, prompt := []int{5, 2, 2, 0, 1}, []int{6}
			for _, dc := range decodeCases {
				want, err := GenerateFromSource(am, cfg, src, prompt, 10, dc.s, -1, rand.New(rand.NewPCG(1, 2)))
				if err != nil {
					t.Fatal(err)
				}
				got, err := gen.Generate(src, prompt, 10, dc.s, -1, rand.New(rand.NewPCG(1, 2)))
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s: cached %v, uncached %v", dc.name, got, want)
				}
				t.Logf("%s: %v", dc.name, got)
			}
		})
	}
}

// TestCachedGenerateStopAndErrors checks the stop token and argument errors.
func TestCachedGenerateStopAndErrors(t *testing.T) {
	cfg := DefaultConfig(ArchLM, 7, 8)
	cfg.Dim, cfg.Heads, cfg.Layers, cfg.Hidden = 8, 2, 1, 16
	m, _ := newTestModel(t, cfg)
	gen, err := NewGenerator(m)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(0, 0))
	all, err := gen.Generate(nil, []int{1}, 5, Sampling{}, -1, rng)
	if err != nil || len(all) != 5 {
		t.Fatalf("got %v, %v; want 5 tokens", all, err)
	}
	stopped, err := gen.Generate(nil, []int{1}, 5, Sampling{}, all[1], rng)
	if err != nil || !slices.Equal(stopped, all[:slices.Index(all, all[1])+1]) {
		t.Errorf("stop %d: got %v, %v; want the prefix of %v through the stop token", all[1], stopped, err, all)
	}
	for _, bad := range []struct {
		src, prompt []int
		s           Sampling
	}{
		{nil, nil, Sampling{}},
		{nil, []int{7}, Sampling{}},
		{[]int{1}, []int{1}, Sampling{}},
		{nil, []int{1}, Sampling{TopP: 2}},
	} {
		if _, err := gen.Generate(bad.src, bad.prompt, 3, bad.s, -1, rng); err == nil {
			t.Errorf("Generate(%v, %v, %+v) succeeded", bad.src, bad.prompt, bad.s)
		}
	}
	enc, _ := newTestModel(t, DefaultConfig(ArchEncoder, 7, 8))
	if _, err := NewGenerator(enc); err == nil {
		t.Error("NewGenerator accepted an encoder")
	}
}

// TestStepLogitsMatch compares the decode step's logits (StepBuilder, whose last block
// computes only the last position: layers.Block.StepLast) with the full model's at the
// last position, in float64: a window of 6 new tokens without a cache, and 2 new tokens
// after a cache of 4.
func TestStepLogitsMatch(t *testing.T) {
	for _, tc := range decodeConfigs {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig(ArchLM, 7, 8)
			cfg.Dim, cfg.Heads, cfg.Layers, cfg.Hidden, cfg.Init = 16, 2, 2, 24, layers.InitTorch
			if tc.mut != nil {
				tc.mut(&cfg)
			}
			m, _ := newTestModel(t, cfg)
			full := autodiff.NewModel(m.Params, func(g *autodiff.Graph) (autodiff.Outputs, error) {
				return autodiff.Outputs{Values: map[string]*autodiff.Node{OutputLogits: m.Logits(g, g.Input(InputIDs))}}, g.Err()
			}, 1)
			step := autodiff.NewModel(m.Params, m.StepBuilder(), 1)
			const B, T = 2, 6
			ids := []int{3, 1, 4, 1, 5, 2, 6, 5, 3, 5, 0, 2}
			res, err := full.Forward(map[string]*tensor.Dense{InputIDs: tensor.New(tensor.WithShape(B, T), tensor.WithBacking(ids))})
			if err != nil {
				t.Fatal(err)
			}
			want := res.Values[OutputLogits].Float64s() // [B·T, V]
			cols := func(lo, hi int) *tensor.Dense {
				var sub []int
				for b := range B {
					sub = append(sub, ids[b*T+lo:b*T+hi]...)
				}
				return tensor.New(tensor.WithShape(B, hi-lo), tensor.WithBacking(sub))
			}
			check := func(what string, got *tensor.Dense) {
				t.Helper()
				worst := 0.0
				for b := range B {
					for j := range cfg.Vocab {
						worst = max(worst, math.Abs(got.Float64s()[b*cfg.Vocab+j]-want[(b*T+T-1)*cfg.Vocab+j]))
					}
				}
				t.Logf("%s: max |step − full| logit difference %.3g", what, worst)
				if worst > 1e-10 {
					t.Errorf("%s: the step's logits differ from the full model's by %g", what, worst)
				}
			}
			res, err = step.Forward(map[string]*tensor.Dense{InputIDs: cols(0, T)})
			if err != nil {
				t.Fatal(err)
			}
			check("window of 6", res.Values[OutputLogits])
			res, err = step.Forward(map[string]*tensor.Dense{InputIDs: cols(0, 4)})
			if err != nil {
				t.Fatal(err)
			}
			in := map[string]*tensor.Dense{InputIDs: cols(4, T)}
			for l := range cfg.Layers {
				in[CacheKeys(l)] = res.Values[CacheKeys(l)].Clone().(*tensor.Dense)
				in[CacheValues(l)] = res.Values[CacheValues(l)].Clone().(*tensor.Dense)
			}
			res, err = step.Forward(in)
			if err != nil {
				t.Fatal(err)
			}
			check("2 after a cache of 4", res.Values[OutputLogits])
		})
	}
}

// TestWindowStepLogitsMatch compares, in float64, the logits of every step of cached
// generation (the prompt's step, then WindowStepBuilder's one-token steps over the
// fixed-size cache, then, past MaxLen = 8, the recomputed windows) with the full model's
// at the last position of the same context.
func TestWindowStepLogitsMatch(t *testing.T) {
	for _, tc := range decodeConfigs {
		t.Run(tc.name, func(t *testing.T) {
			m, am, gen := newDecodeModel(t, tc.mut)
			cfg := m.Config
			var rows [][]float64
			gen.onLogits = func(row []float64) { rows = append(rows, slices.Clone(row)) }
			prompt := []int{3, 1, 4}
			out, err := gen.Generate(nil, prompt, 9, Sampling{}, -1, rand.New(rand.NewPCG(5, 6)))
			if err != nil {
				t.Fatal(err)
			}
			worst := 0.0
			for i, row := range rows {
				seq := append(slices.Clone(prompt), out[:i]...)
				want := lastLogits(t, am, cfg.Vocab, seq[max(0, len(seq)-cfg.MaxLen):])
				for j := range row {
					worst = max(worst, math.Abs(row[j]-want[j]))
				}
			}
			t.Logf("max |cached − full| logit difference over %d steps: %.3g", len(rows), worst)
			if len(rows) != 9 || worst > 1e-10 {
				t.Errorf("%d steps; logits differ from the full model's by %g", len(rows), worst)
			}
		})
	}
}

// TestGenerateMemoryBounded: the exact model's key/value cache has a fixed capacity for
// every context that fits it (here 255 = MaxLen − 1 positions from the 128th token on),
// allocated once, and one compiled graph serves every one-token step within it, so what
// a token allocates does not grow with its index (tokens 185–240 allocate no more than
// tokens 130–185, within 5 % and 2 KiB a token: on the cache that grew, each token cost a
// compiled graph and a copy of the whole cache), the heap in use after 235 tokens is that
// after 140 within 1 MiB, and the generator holds 2·Layers·(MaxLen−1)·Dim values.
func TestGenerateMemoryBounded(t *testing.T) {
	cfg := DefaultConfig(ArchLM, 11, 256)
	cfg.Dim, cfg.Heads, cfg.Layers, cfg.Hidden = 16, 2, 2, 32
	gen, err := NewGenerator(newModelDtype(t, cfg, autodiff.Float32))
	if err != nil {
		t.Fatal(err)
	}
	var alloc []uint64
	var heap []uint64
	var ms runtime.MemStats
	gen.onLogits = func([]float64) {
		if i := len(alloc); i == 140 || i == 235 {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			heap = append(heap, ms.HeapInuse)
		}
		runtime.ReadMemStats(&ms)
		alloc = append(alloc, ms.TotalAlloc)
	}
	if _, err := gen.Generate(nil, []int{1}, 241, Sampling{Temperature: 1}, -1, rand.New(rand.NewPCG(1, 2))); err != nil {
		t.Fatal(err)
	}
	early, late := float64(alloc[185]-alloc[130])/55, float64(alloc[240]-alloc[185])/55
	t.Logf("bytes allocated per token: %.0f at tokens 130–185, %.0f at 185–240; heap in use %d -> %d", early, late, heap[0], heap[1])
	if late > 1.05*early+2<<10 {
		t.Errorf("a token allocates %.0f bytes at tokens 185–240, %.0f at 130–185: it grows with the token's index", late, early)
	}
	if heap[1] > heap[0]+1<<20 {
		t.Errorf("heap in use %d bytes after 140 tokens, %d after 235: it grows with the tokens", heap[0], heap[1])
	}
	if want := 2 * cfg.Layers * (cfg.MaxLen - 1) * cfg.Dim; gen.Held() != want {
		t.Errorf("the cache holds %d values, want %d", gen.Held(), want)
	}
}

// TestCachedGenerateShortContexts: with MaxLen 1 (no cache: every token is a window of
// one), 2 (a cache of one slot) and 17 (capacities 15, then 16) cached decoding gives
// the uncached tokens.
func TestCachedGenerateShortContexts(t *testing.T) {
	for _, maxLen := range []int{1, 2, 17} {
		cfg := DefaultConfig(ArchLM, 7, maxLen)
		cfg.Dim, cfg.Heads, cfg.Layers, cfg.Hidden, cfg.Init = 8, 2, 2, 16, layers.InitTorch
		m, am := newTestModel(t, cfg)
		gen, err := NewGenerator(m)
		if err != nil {
			t.Fatal(err)
		}
		for _, dc := range decodeCases {
			want, err := Generate(am, cfg, []int{2}, 24, dc.s, -1, rand.New(rand.NewPCG(3, 4)))
			if err != nil {
				t.Fatal(err)
			}
			got, err := gen.Generate(nil, []int{2}, 24, dc.s, -1, rand.New(rand.NewPCG(3, 4)))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("max_len %d, %s: cached %v, uncached %v", maxLen, dc.name, got, want)
			}
		}
	}
}
