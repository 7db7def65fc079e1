package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/models/transformer"
	"github.com/locusml/locus/train"
	"gorgonia.org/tensor"
)

// TestExportRefusesDamagedCheckpoints: a checkpoint that is damaged yet correctly signed
// (its files' digests recomputed, as SaveCheckpoint does) is refused by every export
// format with one line and nothing written, as eval refuses it: export rebuilds the model
// and checks every tensor before writing (issue 36: these wrote a file and said so).
func TestExportRefusesDamagedCheckpoints(t *testing.T) {
	dir := t.TempDir()
	cfg := transformer.DefaultConfig(transformer.ArchLM, 7, 8)
	cfg.Dim, cfg.Heads, cfg.Layers, cfg.Hidden = 8, 2, 1, 16
	ps, _ := autodiff.NewParams(autodiff.Float32, 1)
	if _, err := transformer.New(cfg, ps); err != nil {
		t.Fatal(err)
	}
	f32 := func(shape ...int) *tensor.Dense {
		return tensor.New(tensor.WithShape(shape...), tensor.Of(tensor.Float32))
	}
	type damage struct {
		name   string
		family string
		config func(*transformer.Config)
		params func(map[string]*tensor.Dense)
		want   string
	}
	for _, d := range []damage{
		{name: "no tensors", params: func(m map[string]*tensor.Dense) { clear(m) }, want: "is missing"},
		{name: "a missing tensor", params: func(m map[string]*tensor.Dense) { delete(m, "head.weight") }, want: `tensor "head.weight" is missing`},
		{name: "a renamed tensor", params: func(m map[string]*tensor.Dense) { m["head.weights"] = m["head.weight"]; delete(m, "head.weight") }, want: `unexpected tensor "head.weights"`},
		{name: "an extra tensor", params: func(m map[string]*tensor.Dense) { m["blocks.1.ln1.weight"] = f32(8) }, want: `unexpected tensor "blocks.1.ln1.weight"`},
		{name: "a transposed tensor", params: func(m map[string]*tensor.Dense) {
			s := m["head.weight"].Shape()
			m["head.weight"] = f32(s[1], s[0])
		}, want: `tensor "head.weight": shape`},
		{name: "a scalar tensor", params: func(m map[string]*tensor.Dense) { m["ln_f.weight"] = tensor.New(tensor.FromScalar(float32(1))) }, want: `tensor "ln_f.weight": shape`},
		{name: "an int64 tensor", params: func(m map[string]*tensor.Dense) {
			m["ln_f.bias"] = tensor.New(tensor.WithShape(8), tensor.Of(tensor.Int64))
		}, want: `tensor "ln_f.bias": dtype int64`},
		{name: "a tensor with an extra axis", params: func(m map[string]*tensor.Dense) { m["ln_f.bias"] = f32(1, 8) }, want: `tensor "ln_f.bias": shape`},
		{name: "a tensor one row short", params: func(m map[string]*tensor.Dense) { m["tok_emb.weight"] = f32(6, 8) }, want: `tensor "tok_emb.weight": shape`},
		{name: "model_config dim not the weights'", config: func(c *transformer.Config) { c.Dim, c.Hidden = 16, 16 }, want: "does not match parameter shape"},
		{name: "model_config vocab not the weights'", config: func(c *transformer.Config) { c.Vocab = 9 }, want: "does not match parameter shape"},
		{name: "model_config with more layers", config: func(c *transformer.Config) { c.Layers = 2 }, want: `tensor "blocks.1.`},
		{name: "model_config with tied weights", config: func(c *transformer.Config) { c.Tied = true }, want: `unexpected tensor "head.weight"`},
		{name: "model_family gpt", family: "gpt", want: `model family "gpt" is not one this program knows`},
	} {
		c := cfg
		if d.config != nil {
			d.config(&c)
		}
		raw, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		params := train.ParamTensors(ps)
		if d.params != nil {
			d.params(params)
		}
		family := transformer.Family
		if d.family != "" {
			family = d.family
		}
		ck := filepath.Join(dir, strings.ReplaceAll(d.name, " ", "-"))
		if len(params) == 0 { // SaveCheckpoint refuses it: write the tensor file by hand
			if err := train.SaveCheckpoint(ck, &train.Checkpoint{Step: 3, Family: family, ModelConfig: raw, Params: train.ParamTensors(ps)}); err != nil {
				t.Fatal(err)
			}
			if err := train.ExportSafetensors(filepath.Join(ck, train.ModelFile), params, nil); err != nil {
				t.Fatal(err)
			}
			resign(t, ck)
		} else if err := train.SaveCheckpoint(ck, &train.Checkpoint{Step: 3, Family: family, ModelConfig: raw, Params: params}); err != nil {
			t.Fatalf("%s: %v", d.name, err)
		}
		code, _, stderr := runCLI(t, "eval", "-ckpt", ck)
		if code == 0 || !strings.Contains(stderr, d.want) {
			t.Errorf("%s: eval: exit %d, stderr %q; want %q", d.name, code, stderr, d.want)
		}
		for _, format := range []string{formatTorch, formatSafetensors, formatONNX} {
			out := filepath.Join(dir, "out."+format)
			code, stdout, stderr := runCLI(t, "export", "-format", format, "-ckpt", ck, "-out", out)
			msg := strings.TrimSpace(stderr)
			if code == 0 || strings.Contains(msg, "\n") || !strings.Contains(msg, d.want) || stdout != "" {
				t.Errorf("%s: -format %s: exit %d, stdout %q, stderr %q; want one line with %q", d.name, format, code, stdout, msg, d.want)
			}
			if _, err := os.Lstat(out); !os.IsNotExist(err) {
				t.Errorf("%s: -format %s wrote %s", d.name, format, out)
				os.Remove(out)
			}
		}
	}
}

// resign records the size and SHA-256 of a checkpoint's tensor files anew in its
// checkpoint.json, as someone who damages a checkpoint on purpose would.
func resign(t *testing.T, ck string) {
	t.Helper()
	path := filepath.Join(ck, train.MetaFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	for name := range meta["files"].(map[string]any) {
		data, err := os.ReadFile(filepath.Join(ck, name))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		meta["files"].(map[string]any)[name] = map[string]any{"size": len(data), "sha256": hex.EncodeToString(sum[:])}
	}
	if b, err = json.Marshal(meta); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestExportTorchRandomFeatures: PyTorch's reference LM computes exact softmax
// attention, so a random-feature model is refused by -format torch (issue 36: it was
// written, and PyTorch computed another function); dropout, which evaluation ignores,
// is exported.
func TestExportTorchRandomFeatures(t *testing.T) {
	dir := t.TempDir()
	rf := filepath.Join(dir, "rf")
	saveTransformer(t, rf, func(c *transformer.Config) { c.RandomFeatures = 64 })
	out := filepath.Join(dir, "m.safetensors")
	code, _, stderr := runCLI(t, "export", "-format", "torch", "-ckpt", rf, "-out", out)
	if code == 0 || !strings.Contains(stderr, "random_features 64") || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
		t.Errorf("random features: exit %d, stderr %q; want one line naming random_features 64", code, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused export left %s", out)
	}
	drop := filepath.Join(dir, "dropout")
	saveTransformer(t, drop, func(c *transformer.Config) { c.Dropout = 0.1 })
	if code, stdout, stderr := runCLI(t, "export", "-format", "torch", "-ckpt", drop, "-out", out); code != 0 || !strings.Contains(stdout, "PyTorch") {
		t.Errorf("dropout 0.1: exit %d %q %s", code, stdout, stderr)
	}
}
