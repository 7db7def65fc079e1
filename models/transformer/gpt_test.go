package transformer

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/layers"
	"github.com/locusml/locus/train"
	"gorgonia.org/tensor"
)

// gptCases are the GPT-2 options that PyTorch has, alone and together (nanoGPT's
// shakespeare_char model: tied head, no biases, exact GELU).
func gptCases() map[string]func(*Config) {
	return map[string]func(*Config){
		"tied":       func(c *Config) { c.Tied = true },
		"no_bias":    func(c *Config) { c.NoBias = true },
		"gelu_exact": func(c *Config) { c.Activation = layers.GELUExact },
		"nanogpt": func(c *Config) {
			c.Tied, c.NoBias, c.Activation, c.Init = true, true, layers.GELUExact, layers.InitGPT2
		},
		"untied-no_bias-relu": func(c *Config) { c.NoBias, c.Activation = true, layers.ReLU },
	}
}

// TestGPTOptionsMatchTorch computes, in float64, the logits of models with the options
// of gptCases on perturbed weights, and compares them with those of a GPT-2 LM written in
// PyTorch (testdata/gpt_logits.py) on the same weights: names, shapes and function must
// agree. It skips where /usr/bin/python3 has no torch.
func TestGPTOptionsMatchTorch(t *testing.T) {
	const python = "/usr/bin/python3"
	if exec.Command(python, "-c", "import torch").Run() != nil {
		t.Skip(python + " without torch")
	}
	type param struct {
		Shape []int     `json:"shape"`
		Data  []float64 `json:"data"`
	}
	type job struct {
		Config Config           `json:"config"`
		Params map[string]param `json:"params"`
		IDs    [][]int          `json:"ids"`
	}
	var jobs []job
	var names []string
	var want [][]float64
	for name, set := range gptCases() {
		cfg := DefaultConfig(ArchLM, 11, 12)
		cfg.Dim, cfg.Heads, cfg.Layers, cfg.Hidden = 16, 2, 2, 24
		set(&cfg)
		ps, _ := autodiff.NewParams(autodiff.Float64, 3)
		m, err := New(cfg, ps)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		perturb(ps, 4, 0.2) // biases and norms away from 0 and 1
		j := job{Config: cfg, Params: map[string]param{}}
		for _, p := range ps.List() {
			j.Params[p.Name()] = param{Shape: p.Shape(), Data: append([]float64(nil), p.Float64s()...)}
		}
		rng := rand.New(rand.NewPCG(5, 6))
		const b, tq = 2, 9
		ids, _ := randIDs(rng, cfg.Vocab, b*tq)
		j.IDs = [][]int{ids[:tq], ids[tq:]}
		res, err := autodiff.NewModel(ps, m.Builder(), 1).Forward(map[string]*tensor.Dense{InputIDs: intTensor([]int{b, tq}, ids...)})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		jobs, names = append(jobs, j), append(names, name)
		want = append(want, res.Values[OutputLogits].Data().([]float64))
	}
	in, err := json.Marshal(jobs)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, filepath.Join("testdata", "gpt_logits.py"))
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(in), &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("gpt_logits.py: %v\n%s", err, errb.String())
	}
	var got [][]float64
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || len(got) != len(want) {
		t.Fatalf("gpt_logits.py: %d results (%v), want %d", len(got), err, len(want))
	}
	for i, name := range names {
		if len(got[i]) != len(want[i]) {
			t.Errorf("%s: PyTorch %d logits, Locus %d", name, len(got[i]), len(want[i]))
			continue
		}
		var worst float64
		for k := range want[i] {
			worst = max(worst, math.Abs(got[i][k]-want[i][k]))
		}
		t.Logf("%s: max |Locus − PyTorch| = %.2g over %d logits", name, worst, len(want[i]))
		if worst > 1e-10 {
			t.Errorf("%s: logits differ from PyTorch's by up to %.3g, want <= 1e-10", name, worst)
		}
	}
}

// TestGPTOptionParams: -bias=false leaves no bias parameter, a tied model no head, and
// InitGPT2 draws InitGPT's values with every residual projection (attn.o, ffn.fc2; for
// encdec xattn.o too) scaled by 1/√(2·layers).
func TestGPTOptionParams(t *testing.T) {
	for _, arch := range []Arch{ArchLM, ArchEncDec} {
		build := func(set func(*Config)) *autodiff.Params {
			t.Helper()
			cfg := DefaultConfig(arch, 11, 12)
			cfg.Dim, cfg.Heads, cfg.Layers = 8, 2, 3
			set(&cfg)
			ps, _ := autodiff.NewParams(autodiff.Float64, 7)
			if _, err := New(cfg, ps); err != nil {
				t.Fatal(err)
			}
			return ps
		}
		for _, n := range build(func(c *Config) { c.NoBias, c.Tied = true, true }).Names() {
			if strings.HasSuffix(n, ".bias") || strings.HasPrefix(n, "head.") {
				t.Errorf("%s, no_bias and tied: parameter %s", arch, n)
			}
		}
		gpt, gpt2 := build(func(*Config) {}), build(func(c *Config) { c.Init = layers.InitGPT2 })
		scale := 1 / math.Sqrt(2*3)
		var scaled int
		for _, p := range gpt.List() {
			q := gpt2.Get(p.Name())
			f := 1.0
			if strings.HasSuffix(p.Name(), "attn.o.weight") || strings.HasSuffix(p.Name(), "ffn.fc2.weight") {
				f = scale
				scaled++
			}
			for i := range p.Size() {
				if math.Abs(q.At(i)-f*p.At(i)) > 1e-15 {
					t.Fatalf("%s %s[%d]: gpt2 %g, want %g·gpt's %g", arch, p.Name(), i, q.At(i), f, p.At(i))
				}
			}
		}
		wantScaled := 2 * 3 // o and fc2 in each of 3 blocks
		if arch == ArchEncDec {
			wantScaled = 2*3 + 3*3 // encoder blocks; decoder blocks with xattn.o
		}
		if scaled != wantScaled {
			t.Errorf("%s: %d residual projections scaled, want %d", arch, scaled, wantScaled)
		}
	}
}

// TestOldConfigHasBiases: a configuration written before no_bias existed (the fixture's,
// from the committed weights' metadata) parses to a model with biases, and a default
// configuration is written without the key, as before.
func TestOldConfigHasBiases(t *testing.T) {
	_, meta, err := train.ReadSafetensors(torchWeights)
	if err != nil {
		t.Fatal(err)
	}
	raw := meta["locus_config"]
	if strings.Contains(raw, "no_bias") {
		t.Fatalf("the fixture's config %s already has no_bias", raw)
	}
	cfg, err := ParseConfig(json.RawMessage(raw))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.NoBias || cfg.Init != layers.InitGPT {
		t.Errorf("old config %s: NoBias %v, Init %v; want biases and gpt", raw, cfg.NoBias, cfg.Init)
	}
	b, _ := json.Marshal(DefaultConfig(ArchLM, 7, 8))
	if strings.Contains(string(b), "no_bias") {
		t.Errorf("default config %s has no_bias", b)
	}
}
