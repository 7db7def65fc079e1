package transformer

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/optim"
	"github.com/locusml/locus/train"
	"gorgonia.org/tensor"
)

// The PyTorch logits fixture (testdata/README.md): torch_lm.safetensors holds the weights
// of a standard LM trained briefly in Go, torch_lm_logits.safetensors the ids and the
// logits that PyTorch's reference LM (shared/peers/torch_peer.py) computes from them.
const (
	torchWeights = "testdata/torch_lm.safetensors"
	torchLogits  = "testdata/torch_lm_logits.safetensors"
)

// torchConfig is the reference charlm model: V=65, d=64, h=4, L=2, d_ff=256, T=64.
func torchConfig() Config { return DefaultConfig(ArchLM, 65, 64) }

// TestWriteTorchFixture trains the standard LM for a few steps and writes its weights to
// testdata/torch_lm.safetensors. It runs only with LOCUS_WRITE_FIXTURE=1; then run
// testdata/torch_logits.py (see testdata/README.md).
func TestWriteTorchFixture(t *testing.T) {
	if os.Getenv("LOCUS_WRITE_FIXTURE") != "1" {
		t.Skip("set LOCUS_WRITE_FIXTURE=1 to rewrite the PyTorch fixture's weights")
	}
	cfg := torchConfig()
	ps, _ := autodiff.NewParams(autodiff.Float32, 11)
	m, err := New(cfg, ps)
	if err != nil {
		t.Fatal(err)
	}
	am := autodiff.NewModel(ps, m.Builder(), 1)
	acfg := optim.DefaultAdamConfig()
	acfg.LR = 3e-3
	opt, err := optim.NewAdam(optim.All(ps.List()), acfg)
	if err != nil {
		t.Fatal(err)
	}
	// Arithmetic progressions mod V with a random start and stride: the next id depends
	// on the two before it, so attention has something to learn.
	rng := newFixtureRand()
	const b, steps = 16, 40
	for step := range steps {
		ids := make([]int, b*cfg.MaxLen)
		tgts := make([]int, b*cfg.MaxLen)
		for i := range b {
			x, d := rng.IntN(cfg.Vocab), 1+rng.IntN(4)
			for j := range cfg.MaxLen {
				ids[i*cfg.MaxLen+j] = x
				x = (x + d) % cfg.Vocab
				tgts[i*cfg.MaxLen+j] = x
			}
		}
		ps.ZeroGrad()
		res, err := am.ForwardBackward(map[string]*tensor.Dense{
			InputIDs:     tensor.New(tensor.WithShape(b, cfg.MaxLen), tensor.WithBacking(ids)),
			InputTargets: tensor.New(tensor.WithShape(b*cfg.MaxLen), tensor.WithBacking(tgts)),
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		if step == 0 || step == steps-1 {
			t.Logf("step %d loss %.4f", step+1, res.Loss)
		}
	}
	cj, _ := json.Marshal(cfg)
	meta := map[string]string{"format": "pt", "locus_config": string(cj), "train_steps": "40"}
	if err := train.ExportSafetensors(torchWeights, train.ParamTensors(ps), meta); err != nil {
		t.Fatal(err)
	}
}

// TestTorchLogits loads the committed weights into the Go LM, computes the logits of
// the committed ids and compares them with PyTorch's: float32 against torch's float32
// logits, float64 against torch's float64 logits of the same weights.
func TestTorchLogits(t *testing.T) {
	weights, _, err := train.ReadSafetensors(torchWeights)
	if err != nil {
		t.Fatal(err)
	}
	ref, meta, err := train.ReadSafetensors(torchLogits)
	if err != nil {
		t.Fatal(err)
	}
	idsT, want32, want64 := ref["ids"], ref["logits"], ref["logits64"]
	if idsT == nil || want32 == nil || want64 == nil {
		t.Fatalf("%s: want tensors ids, logits and logits64, have %d tensors", torchLogits, len(ref))
	}
	ids := make([]int, idsT.Shape().TotalSize())
	for i, v := range idsT.Data().([]int64) {
		ids[i] = int(v)
	}
	for _, tc := range []struct {
		dt   autodiff.Dtype
		want *tensor.Dense
		tol  float64
	}{
		// float32 on both sides: round-off of float32 (torch's own f32-vs-f64 difference
		// is in the metadata); float64 on both sides: the same computation.
		{autodiff.Float32, want32, 2e-5},
		{autodiff.Float64, want64, 1e-10},
	} {
		dt := tc.dt
		want := make([]float64, tc.want.Shape().TotalSize())
		switch d := tc.want.Data().(type) {
		case []float32:
			for i, v := range d {
				want[i] = float64(v)
			}
		case []float64:
			copy(want, d)
		}
		ps, _ := autodiff.NewParams(dt, 0)
		m, err := New(torchConfig(), ps)
		if err != nil {
			t.Fatal(err)
		}
		if len(weights) != ps.Len() {
			t.Fatalf("%s has %d tensors, the model %d parameters", torchWeights, len(weights), ps.Len())
		}
		ck := &train.Checkpoint{Dir: filepath.Dir(torchWeights), Params: weights}
		if err := ck.ApplyParams(ps); err != nil {
			t.Fatal(err)
		}
		am := autodiff.NewModel(ps, m.Builder(), 0)
		res, err := am.Forward(map[string]*tensor.Dense{InputIDs: tensor.New(tensor.WithShape(idsT.Shape()...), tensor.WithBacking(ids))})
		if err != nil {
			t.Fatal(err)
		}
		got := res.Values[OutputLogits]
		if got.Shape().TotalSize() != len(want) {
			t.Fatalf("logits %v, torch's %v", got.Shape(), tc.want.Shape())
		}
		var worst, scale float64
		for i := range want {
			var g float64
			switch d := got.Data().(type) {
			case []float32:
				g = float64(d[i])
			case []float64:
				g = d[i]
			}
			worst = max(worst, math.Abs(g-want[i]))
			scale = max(scale, math.Abs(want[i]))
		}
		t.Logf("%v: largest |Go − PyTorch| logit difference %.3g (largest |logit| %.3g; PyTorch's own float32-vs-float64 difference %s)", dt, worst, scale, meta["f32_vs_f64_max_abs"])
		if worst > tc.tol {
			t.Errorf("%v: logits differ from PyTorch's by up to %.3g, want <= %g", dt, worst, tc.tol)
		}
	}
}

func newFixtureRand() *rand.Rand { return rand.New(rand.NewPCG(2026, 7)) }

// TestCachedGenerateTrainedLM compares cached and uncached greedy decoding in float32
// with the fixture's trained weights, past the context length (the sliding window).
func TestCachedGenerateTrainedLM(t *testing.T) {
	weights, _, err := train.ReadSafetensors(torchWeights)
	if err != nil {
		t.Fatal(err)
	}
	ps, _ := autodiff.NewParams(autodiff.Float32, 0)
	cfg := torchConfig()
	m, err := New(cfg, ps)
	if err != nil {
		t.Fatal(err)
	}
	if err := (&train.Checkpoint{Dir: "testdata", Params: weights}).ApplyParams(ps); err != nil {
		t.Fatal(err)
	}
	prompt := make([]int, 56)
	for i := range prompt {
		prompt[i] = (7 + 3*i) % cfg.Vocab
	}
	want, err := Generate(autodiff.NewModel(ps, m.Builder(), 0), cfg, prompt, 12, Sampling{}, -1, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := GenerateCached(m, prompt, 12, Sampling{}, -1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("cached %v, uncached %v", got, want)
	}
	t.Logf("greedy continuation of 7, 10, 13, ... (step 3 mod 65): %v", got)
}
