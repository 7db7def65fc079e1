package transformer

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/layers"
	"gorgonia.org/tensor"
)

// positionLosses returns the next-token cross-entropy at every position of ids[:len-1]
// (targets ids[1:]) for the LM m, one sequence, in float64.
func positionLosses(t *testing.T, m *Model, ids []int) []float64 {
	t.Helper()
	n := len(ids) - 1
	run := autodiff.NewModel(m.Params, m.Builder(), 0)
	res, err := run.Forward(map[string]*tensor.Dense{InputIDs: idsTensor(ids[:n])})
	if err != nil {
		t.Fatal(err)
	}
	logits := res.Values[OutputLogits].Data().([]float64)
	v := m.Config.Vocab
	out := make([]float64, n)
	for i := range n {
		row := logits[i*v : (i+1)*v]
		mx := math.Inf(-1)
		for _, x := range row {
			mx = max(mx, x)
		}
		var z float64
		for _, x := range row {
			z += math.Exp(x - mx)
		}
		out[i] = mx + math.Log(z) - row[ids[i+1]]
	}
	return out
}

// TestAtLengthExactWithoutPositions: an LM without positions and a window kernel,
// built for rows of 24 and evaluated by AtLength at 48, gives the same per-position loss
// (float64, to 1e-12) on the first 24 positions, and, past the window's reach
// (1 + 7·layers tokens), the same loss for the same text wherever the row starts; with
// sinusoidal positions the second does not hold (the check can fail).
func TestAtLengthExactWithoutPositions(t *testing.T) {
	const short, long, layersN = 24, 48, 2
	rng := rand.New(rand.NewPCG(5, 6))
	seq := make([]int, long+1)
	for i := range seq {
		seq[i] = rng.IntN(11)
	}
	for _, pos := range []layers.PositionEncoding{layers.PositionsNone, layers.PositionsSinusoidal} {
		t.Run(pos.String(), func(t *testing.T) {
			ps, err := autodiff.NewParams(autodiff.Float64, 7)
			if err != nil {
				t.Fatal(err)
			}
			cfg := DefaultConfig(ArchLM, 11, short)
			cfg.Dim, cfg.Heads, cfg.Layers, cfg.Hidden = 16, 2, layersN, 32
			cfg.Positions, cfg.Kernel = pos, layers.MustParseKernelSpec("exponential * window(8)")
			m, err := New(cfg, ps)
			if err != nil {
				t.Fatal(err)
			}
			at, err := m.AtLength(long)
			if err != nil {
				t.Fatal(err)
			}
			if at.Config.MaxLen != long || m.Config.MaxLen != short {
				t.Fatalf("max_len %d (the original's %d), want %d (and %d)", at.Config.MaxLen, m.Config.MaxLen, long, short)
			}
			full := positionLosses(t, at, seq)
			prefix := positionLosses(t, m, seq[:short+1])
			for i, l := range prefix {
				if d := math.Abs(l - full[i]); !(d <= 1e-12) {
					t.Errorf("position %d: loss %.15g at length %d, %.15g at %d", i, l, short, full[i], long)
				}
			}
			// The row starting at 24: its position i is the text's position 24+i.
			shifted := positionLosses(t, m, seq[short:])
			reach := 1 + 7*layersN
			var worst float64
			for i := reach - 1; i < short; i++ {
				worst = max(worst, math.Abs(shifted[i]-full[short+i]))
			}
			if pos == layers.PositionsNone && !(worst <= 1e-12) {
				t.Errorf("the same text's losses differ by %g between rows starting at 0 and at %d", worst, short)
			}
			if pos == layers.PositionsSinusoidal && !(worst > 1e-6) {
				t.Errorf("sinusoidal positions: losses differ by only %g between rows starting at 0 and %d; the check cannot fail", worst, short)
			}
		})
	}
}

// TestAtLengthLearnedTable: learned positions run within their table and refuse a
// longer row naming both lengths; sinusoidal, rotary and none run at any length.
func TestAtLengthLearnedTable(t *testing.T) {
	for _, pos := range []layers.PositionEncoding{layers.PositionsLearned, layers.PositionsSinusoidal, layers.PositionsRotary, layers.PositionsNone} {
		ps, _ := autodiff.NewParams(autodiff.Float32, 1)
		cfg := DefaultConfig(ArchLM, 5, 16)
		cfg.Dim, cfg.Heads, cfg.Layers, cfg.Positions = 8, 2, 1, pos
		m, err := New(cfg, ps)
		if err != nil {
			t.Fatal(err)
		}
		if at, err := m.AtLength(8); err != nil || at.Config.MaxLen != 16 {
			t.Errorf("%s: AtLength(8): max_len %v, %v; want 16 and no error", pos, at, err)
		}
		at, err := m.AtLength(1024)
		if pos == layers.PositionsLearned {
			if err == nil || !strings.Contains(err.Error(), "rows of 1024 tokens, but the position table has 16") {
				t.Errorf("learned: AtLength(1024): %v, want the refusal naming 1024 and 16", err)
			}
			continue
		}
		if err != nil || at.Config.MaxLen != 1024 {
			t.Fatalf("%s: AtLength(1024): %v", pos, err)
		}
		ids := make([]int, 1025)
		for i := range ids {
			ids[i] = i % 5
		}
		run := autodiff.NewModel(ps, at.Builder(), 0)
		res, err := run.Forward(map[string]*tensor.Dense{InputIDs: idsTensor(ids[:1024])})
		if err != nil {
			t.Fatalf("%s at 1024: %v", pos, err)
		}
		for _, x := range res.Values[OutputLogits].Data().([]float32) {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				t.Fatalf("%s at 1024: logit %v", pos, x)
			}
		}
	}
	if _, err := (&Model{}).AtLength(0); err == nil {
		t.Error("AtLength(0): no error")
	}
}
