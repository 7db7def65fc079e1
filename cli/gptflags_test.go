package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locusml/locus/train"
)

// TestGPTModelFlags: -tie, -bias=false, -activation and -init reach the checkpoint's model
// configuration and parameters, a resume that changes one is refused naming the flag and
// both values, a resume without them keeps them, -format torch refuses the model naming
// the settings PyTorch's reference LM lacks, and a DAE refuses them as unused.
func TestGPTModelFlags(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	gpt := []string{"-arch", "lm", "-tie", "-bias=false", "-activation", "gelu", "-init", "gpt2", "-dropout", "0.1"}
	args := append(append([]string{"train", "-steps", "3", "-out", dir}, tinyModel...), gpt...)
	if code, _, stderr := runCLI(t, args...); code != 0 {
		t.Fatalf("train: exit %d\n%s", code, stderr)
	}
	check := func(what string, step int) {
		t.Helper()
		ck, err := train.LoadCheckpoint(dir)
		if err != nil {
			t.Fatal(err)
		}
		var cfg map[string]any
		if err := json.Unmarshal(ck.ModelConfig, &cfg); err != nil {
			t.Fatal(err)
		}
		for k, v := range map[string]any{"tied": true, "no_bias": true, "activation": "gelu", "init": "gpt2", "dropout": 0.1} {
			if cfg[k] != v {
				t.Errorf("%s: model_config %s = %v, want %v", what, k, cfg[k], v)
			}
		}
		for name := range ck.Params {
			if strings.HasSuffix(name, ".bias") || strings.HasPrefix(name, "head.") {
				t.Errorf("%s: checkpoint has %s", what, name)
			}
		}
		if ck.Step != step {
			t.Errorf("%s: step %d, want %d", what, ck.Step, step)
		}
	}
	check("train", 3)
	for _, tc := range []struct{ flag, want string }{
		{"-tie=false", "-tie false differs from the checkpoint's true"},
		{"-bias", "-bias true differs from the checkpoint's false"},
		{"-activation=gelu_tanh", "-activation gelu_tanh differs from the checkpoint's gelu"},
		{"-init=gpt", "-init gpt differs from the checkpoint's gpt2"},
	} {
		code, _, stderr := runCLI(t, "train", "-steps", "5", "-resume", dir, tc.flag)
		oneLine(t, "resume "+tc.flag, code, stderr, 2, tc.want)
	}
	if code, _, stderr := runCLI(t, "train", "-steps", "5", "-resume", dir, "-activation", "gelu"); code != 0 {
		t.Fatalf("resume: exit %d\n%s", code, stderr)
	}
	check("resume", 5)
	// The run file rebuilds the options under a model flag, as every flag can read them back.
	again := filepath.Join(t.TempDir(), "again")
	if code, _, stderr := runCLI(t, "train", "-config", filepath.Join(dir, runConfigFile), "-out", again, "-steps", "1", "-dmodel", "8"); code != 0 {
		t.Fatalf("-config with a model flag: exit %d\n%s", code, stderr)
	}
	ck, err := train.LoadCheckpoint(again)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Tied       bool
		NoBias     bool `json:"no_bias"`
		Activation string
	}
	if err := json.Unmarshal(ck.ModelConfig, &cfg); err != nil || !cfg.Tied || !cfg.NoBias || cfg.Activation != "gelu" {
		t.Errorf("-config run: model config %s (%v), want tied, no_bias and gelu kept", ck.ModelConfig, err)
	}
	code, _, stderr := runCLI(t, "export", "-ckpt", dir, "-out", filepath.Join(t.TempDir(), "m.pt"))
	oneLine(t, "export -format torch", code, stderr, 1, "-format torch refused", "tied true", "no_bias true", "activation gelu")
	if code, _, stderr := runCLI(t, "export", "-ckpt", dir, "-format", "onnx", "-out", filepath.Join(t.TempDir(), "m.onnx")); code != 0 {
		t.Errorf("export -format onnx: exit %d\n%s", code, stderr)
	}
	for _, f := range []string{"-tie", "-bias=false", "-activation=relu", "-init=torch"} {
		code, _, stderr := runCLI(t, "train", "-model", "dae", f)
		oneLine(t, "dae "+f, code, stderr, 2, "is not used by -model dae")
	}
	code, _, stderr = runCLI(t, "train", "-activation", "swish")
	oneLine(t, "-activation swish", code, stderr, 2, "swish", "gelu_tanh, gelu, relu")
}
