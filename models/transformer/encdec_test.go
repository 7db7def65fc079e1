package transformer

import (
	"context"
	"github.com/locusml/locus/layers"
	"strings"
	"testing"
	"time"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/datasets"
	"gorgonia.org/tensor"
)

func tinyEncDec(t *testing.T, dtype autodiff.Dtype, mut func(*Config)) (*Model, *autodiff.Params) {
	t.Helper()
	ps, err := autodiff.NewParams(dtype, 3)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig(ArchEncDec, 5, 6)
	cfg.Dim, cfg.Heads, cfg.Layers, cfg.Hidden, cfg.Init = 8, 2, 2, 12, layers.InitTorch
	if mut != nil {
		mut(&cfg)
	}
	m, err := New(cfg, ps)
	if err != nil {
		t.Fatal(err)
	}
	return m, ps
}

func intTensor(shape []int, vals ...int) *tensor.Dense {
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(vals))
}

func TestEncDecParamNames(t *testing.T) {
	_, ps := tinyEncDec(t, autodiff.Float32, nil)
	names := strings.Join(ps.SortedNames(), " ")
	for _, want := range []string{
		"tok_emb.weight", "pos_emb.weight", "enc.blocks.1.attn.q.weight", "enc.blocks.0.ffn.fc2.bias", "enc.ln_f.weight",
		"dec.blocks.0.ln1.weight", "dec.blocks.0.attn.k.bias", "dec.blocks.0.ln_x.bias", "dec.blocks.1.xattn.v.weight",
		"dec.blocks.1.ln2.weight", "dec.blocks.1.ffn.fc1.weight", "ln_f.bias", "head.weight",
	} {
		if !strings.Contains(" "+names+" ", " "+want+" ") {
			t.Errorf("missing parameter %s in %s", want, names)
		}
	}
	if strings.Contains(names, " blocks.0") || strings.HasPrefix(names, "blocks.") {
		t.Errorf("encdec has top-level blocks: %s", names)
	}
}

// TestEncDecGradients checks the encoder–decoder's analytic gradients against finite
// differences, for the standard kernel and for a Gaussian kernel with learned per-head
// bandwidths, rotary positions and post-LN.
func TestEncDecGradients(t *testing.T) {
	for _, tc := range []struct {
		name string
		mut  func(*Config)
	}{
		{"standard", nil},
		{"gaussian_head_rotary_postln", func(c *Config) {
			c.Kernel, c.Bandwidth, c.Positions, c.PostLN, c.Tied = layers.MustParseKernelSpec("gaussian"), layers.BandwidthHead, layers.PositionsRotary, true, true
		}},
		{"cauchy_query_sinusoidal", func(c *Config) {
			c.Kernel, c.Bandwidth, c.Positions = layers.MustParseKernelSpec("cauchy"), layers.BandwidthQuery, layers.PositionsSinusoidal
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, ps := tinyEncDec(t, autodiff.Float64, tc.mut)
			am := autodiff.NewModel(ps, m.Builder(), 1)
			in := map[string]*tensor.Dense{
				InputSource:  intTensor([]int{2, 3}, 1, 4, 2, 0, 3, 3),
				InputIDs:     intTensor([]int{2, 4}, 4, 0, 1, 2, 4, 3, 3, 1),
				InputTargets: intTensor([]int{8}, 0, 1, 2, 3, 3, 3, 1, datasets.IgnoreIndex),
			}
			worst, err := autodiff.CheckGradients(am, in, autodiff.GradCheck{MaxPerTensor: 4, RTol: 1e-5, ATol: 1e-7})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("worst of %d values: %s[%d] abs err %.2g, rel err %.2g", worst.CheckedValues, worst.Tensor, worst.Index, worst.AbsErr, worst.RelErr)
		})
	}
}

// TestEncDecBuildErrors checks that misuse is an error, not a panic.
func TestEncDecBuildErrors(t *testing.T) {
	m, ps := tinyEncDec(t, autodiff.Float32, nil)
	am := autodiff.NewModel(ps, m.Builder(), 1)
	if _, err := am.Forward(map[string]*tensor.Dense{InputIDs: intTensor([]int{1, 2}, 1, 2)}); err == nil || !strings.Contains(err.Error(), `"src"`) {
		t.Errorf("missing source: err = %v", err)
	}
	_, err := am.Forward(map[string]*tensor.Dense{InputIDs: intTensor([]int{1, 2}, 1, 2), InputSource: intTensor([]int{2, 1}, 1, 2)})
	if err == nil || !strings.Contains(err.Error(), "batch") {
		t.Errorf("batch mismatch: err = %v", err)
	}
	lm := autodiff.NewModel(ps, func(g *autodiff.Graph) (autodiff.Outputs, error) {
		return autodiff.Outputs{Values: map[string]*autodiff.Node{"x": m.Logits(g, g.Input(InputIDs))}}, g.Err()
	}, 1)
	if _, err := lm.Forward(map[string]*tensor.Dense{InputIDs: intTensor([]int{1, 2}, 1, 2)}); err == nil || !strings.Contains(err.Error(), "EncDecLogits") {
		t.Errorf("Logits on encdec: err = %v", err)
	}
}

// TestEncDecReverseLearns trains an encoder–decoder on reverse (T=8, 10 symbols; source =
// the sequence, decoder input = BOS + the reversed sequence shifted right, BOS = 10) and
// requires 90% whole-sequence accuracy, teacher-forced and free-running greedy.
func TestEncDecReverseLearns(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	task, err := datasets.TaskByName("reverse", datasets.TaskConfig{SeqLen: 8})
	if err != nil {
		t.Fatal(err)
	}
	bos := task.Vocab()
	stream, err := datasets.NewTaskStream(task, datasets.Aligned, 64, 1)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	const steps = 250
	m, am, loss := trainSmall(t, ArchEncDec, task, task.Vocab()+1, 1, steps, &EncDecData{Stream: stream, BOS: bos})
	trained := time.Since(start)
	met, err := EncDecTaskMetrics(context.Background(), am, task, bos, 500, 2)
	if err != nil {
		t.Fatal(err)
	}
	gen, err := NewGenerator(m)
	if err != nil {
		t.Fatal(err)
	}
	greedy, err := EncDecGreedyMetrics(context.Background(), gen, task, bos, 100, 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d steps in %v, final train loss %.4f; teacher-forced %v; greedy (cached) %v", steps, trained.Round(time.Millisecond), loss, met, greedy)
	if met[MetricSeqAcc] < 0.9 || greedy[MetricSeqAcc] < 0.9 {
		t.Fatalf("sequence accuracy %.3f (teacher-forced), %.3f (greedy) < 0.9 after %d steps", met[MetricSeqAcc], greedy[MetricSeqAcc], steps)
	}
}
