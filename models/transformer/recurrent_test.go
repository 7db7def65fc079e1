package transformer

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/layers"
)

// rfTestConfig is a small causal LM on m = 16 random features.
func rfTestConfig(arch Arch, maxLen int, pos layers.PositionEncoding) Config {
	cfg := DefaultConfig(arch, 11, maxLen)
	cfg.Dim, cfg.Heads, cfg.Layers, cfg.Hidden, cfg.Init = 16, 2, 2, 24, layers.InitTorch
	cfg.Positions, cfg.RandomFeatures = pos, 16
	return cfg
}

func newModelDtype(t *testing.T, cfg Config, dt autodiff.Dtype) *Model {
	t.Helper()
	ps, err := autodiff.NewParams(dt, 7)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(cfg, ps)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// lastLogits runs the full forward pass of m over ids and returns the last position's
// logits.
func lastLogits(t *testing.T, am *autodiff.Model, vocab int, ids []int) []float64 {
	t.Helper()
	res, err := am.Forward(map[string]*tensor.Dense{InputIDs: idsTensor(ids)})
	if err != nil {
		t.Fatal(err)
	}
	row := make([]float64, vocab)
	logitsRow(row, res.Values[OutputLogits], len(ids)-1)
	return row
}

// TestRecurrentMatchesForward decodes a random-feature LM with the recurrent state and
// compares every step's logits with the full forward pass (the training-time causal
// prefix sums) over the same context: for learned and sinusoidal positions the last
// MaxLen tokens (the state re-primed from the window past MaxLen), for rotary positions
// and none the whole sequence, past MaxLen (run on the same weights with a larger MaxLen,
// which rotary positions and none do not depend on). The tokens also equal the uncached Generate's
// while the context fits, and always for absolute positions.
func TestRecurrentMatchesForward(t *testing.T) {
	for _, dt := range []autodiff.Dtype{autodiff.Float64, autodiff.Float32} {
		for _, pos := range []layers.PositionEncoding{layers.PositionsLearned, layers.PositionsSinusoidal, layers.PositionsRotary, layers.PositionsNone} {
			t.Run(dt.String()+"/"+pos.String(), func(t *testing.T) {
				const maxLen, n = 10, 16
				cfg := rfTestConfig(ArchLM, maxLen, pos)
				unbounded := pos == layers.PositionsRotary || pos == layers.PositionsNone
				m := newModelDtype(t, cfg, dt)
				if !m.Recurrent() {
					t.Fatal("a random-feature LM is not recurrent")
				}
				full := autodiff.NewModel(m.Params, m.Builder(), 0)
				if unbounded {
					big := cfg
					big.MaxLen = 64
					mb := newModelDtype(t, big, dt) // the same parameters: rotary positions and none add none
					for _, p := range m.Params.List() {
						if err := mb.Params.Get(p.Name()).Set(p.Value()); err != nil {
							t.Fatal(err)
						}
					}
					full = autodiff.NewModel(mb.Params, mb.Builder(), 0)
				}
				gen, err := NewGenerator(m)
				if err != nil {
					t.Fatal(err)
				}
				prompt := []int{3, 1, 4}
				seq := slices.Clone(prompt)
				var worst, scale float64
				gen.onLogits = func(row []float64) {
					ctx := seq
					if !unbounded && len(ctx) > maxLen {
						ctx = ctx[len(ctx)-maxLen:]
					}
					want := lastLogits(t, full, cfg.Vocab, ctx)
					for j := range row {
						worst = max(worst, math.Abs(row[j]-want[j]))
						scale = max(scale, math.Abs(want[j]))
					}
					seq = append(seq, argmax(row))
				}
				got, err := gen.Generate(nil, prompt, n, Sampling{}, -1, nil)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != n || !slices.Equal(seq[len(prompt):], got) {
					t.Fatalf("generated %v, followed %v", got, seq[len(prompt):])
				}
				tol := 1e-10
				if dt == autodiff.Float32 {
					tol = 1e-5
				}
				t.Logf("max |Δ logit| %.3g (max |logit| %.3g) over %d steps", worst, scale, n)
				if worst > tol*max(1, scale) {
					t.Errorf("recurrent logits differ from the full forward pass by %.3g, want <= %.3g", worst, tol*max(1, scale))
				}
				want, err := Generate(autodiff.NewModel(m.Params, m.Builder(), 0), cfg, prompt, n, Sampling{}, -1, nil)
				if err != nil {
					t.Fatal(err)
				}
				fits := maxLen - len(prompt) + 1 // tokens generated before the context passes MaxLen
				if unbounded {
					got, want = got[:fits], want[:fits]
				}
				if !slices.Equal(got, want) {
					t.Errorf("recurrent %v, uncached Generate %v", got, want)
				}
			})
		}
	}
}

// TestRecurrentEncDec compares recurrent decoding of an encoder–decoder on random
// features with the uncached GenerateFromSource.
func TestRecurrentEncDec(t *testing.T) {
	cfg := rfTestConfig(ArchEncDec, 8, layers.PositionsLearned)
	m := newModelDtype(t, cfg, autodiff.Float64)
	gen, err := NewGenerator(m)
	if err != nil {
		t.Fatal(err)
	}
	src, prompt := []int{5, 2, 2, 0, 1}, []int{6}
	for _, dc := range decodeCases {
		want, err := GenerateFromSource(autodiff.NewModel(m.Params, m.Builder(), 1), cfg, src, prompt, 10, dc.s, -1, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		got, err := gen.Generate(src, prompt, 10, dc.s, -1, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: recurrent %v, uncached %v", dc.name, got, want)
		}
	}
}

// TestRecurrentStateConstant checks that the state a random-feature LM keeps while
// generating is the same size after 10 and after 1000 tokens (rotary positions: the
// state runs past MaxLen = 8 without re-priming), Layers·Heads·m·(DHead+1) values, while
// an exact model's key/value cache has the capacity of its context, 2·Layers·C·Dim values
// for C = 15 after 10 tokens (11 in the cache) and C = 127 after 100.
func TestRecurrentStateConstant(t *testing.T) {
	cfg := rfTestConfig(ArchLM, 8, layers.PositionsRotary)
	gen, err := NewGenerator(newModelDtype(t, cfg, autodiff.Float32))
	if err != nil {
		t.Fatal(err)
	}
	held := func(gen *Generator, n int) int {
		got, err := gen.Generate(nil, []int{1, 2}, n, Sampling{Temperature: 1}, -1, rand.New(rand.NewPCG(3, 4)))
		if err != nil || len(got) != n {
			t.Fatalf("generated %d tokens, %v; want %d", len(got), err, n)
		}
		return gen.Held()
	}
	h10, h1000 := held(gen, 10), held(gen, 1000)
	want := cfg.Layers * cfg.Heads * cfg.RandomFeatures * (cfg.Dim/cfg.Heads + 1)
	if h10 != want || h1000 != want {
		t.Errorf("state after 10 tokens %d values, after 1000 %d; want %d both", h10, h1000, want)
	}
	exact := cfg
	exact.RandomFeatures, exact.MaxLen = 0, 200
	xgen, err := NewGenerator(newModelDtype(t, exact, autodiff.Float32))
	if err != nil {
		t.Fatal(err)
	}
	w10, w100 := 2*exact.Layers*15*exact.Dim, 2*exact.Layers*127*exact.Dim
	if x10, x100 := held(xgen, 10), held(xgen, 100); x10 != w10 || x100 != w100 {
		t.Errorf("exact key/value cache after 10 tokens %d values, after 100 %d; want %d and %d", x10, x100, w10, w100)
	}
}

// TestWindowWiderThanSequence: a window wider than MaxLen hides no key and is refused by
// Config.Validate with one line naming the window; one of MaxLen positions is accepted.
func TestWindowWiderThanSequence(t *testing.T) {
	cfg := DefaultConfig(ArchLM, 11, 16)
	cfg.Kernel = layers.MustParseKernelSpec("exponential * window(17)")
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "window(17) is wider than the sequence (16 positions)") || strings.Contains(err.Error(), "\n") {
		t.Errorf("window(17), max_len 16: %v", err)
	}
	cfg.Kernel = layers.MustParseKernelSpec("gaussian * causal * window(16)")
	if err := cfg.Validate(); err != nil {
		t.Errorf("window(16), max_len 16: %v", err)
	}
}
