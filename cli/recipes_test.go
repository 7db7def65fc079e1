package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestRecipes: the run files under configs/ hold nanoGPT's shakespeare_char recipes
// (its README's CPU command, and config/train_shakespeare_char.py's baby GPT), each
// setting as nanoGPT has it (and the CPU command with rotary positions, Locus's best at
// that budget), and each starts a run with -config FILE -data PATH, the
// vocabulary taken from the text.
func TestRecipes(t *testing.T) {
	gpt := map[string]any{"arch": "lm", "kernel": "exponential", "bandwidth": "fixed", "positions": "learned",
		"post_ln": false, "tied": true, "no_bias": true, "activation": "gelu", "init": "gpt2"}
	opt := map[string]any{"optimizer": "adamw", "lr": 1e-3, "betas": "0.9,0.99", "weight_decay": 0.1, "decay_params": "matrices",
		"schedule": "cosine", "warmup": 100.0, "min_lr": 1e-4, "clip": 1.0, "eval_every": 250.0}
	for _, tc := range []struct {
		file         string
		model, train map[string]any
		data         map[string]any
	}{
		{"shakespeare_char_cpu.json",
			map[string]any{"max_len": 64.0, "dim": 128.0, "heads": 4.0, "layers": 4.0, "hidden": 512.0, "dropout": 0.0},
			map[string]any{"steps": 2000.0, "eval_iters": 20.0},
			map[string]any{"task": "charlm", "seq_len": 64.0, "batch": 12.0, "val_fraction": 0.1}},
		{"shakespeare_char_cpu_rotary.json", // Locus's best at that budget: rotary positions
			map[string]any{"max_len": 64.0, "dim": 128.0, "heads": 4.0, "layers": 4.0, "hidden": 512.0, "dropout": 0.0, "positions": "rotary"},
			map[string]any{"steps": 2000.0, "eval_iters": 20.0},
			map[string]any{"task": "charlm", "seq_len": 64.0, "batch": 12.0, "val_fraction": 0.1}},
		{"shakespeare_char.json",
			map[string]any{"max_len": 256.0, "dim": 384.0, "heads": 6.0, "layers": 6.0, "hidden": 1536.0, "dropout": 0.2},
			map[string]any{"steps": 5000.0, "eval_iters": 200.0},
			map[string]any{"task": "charlm", "seq_len": 256.0, "batch": 64.0, "val_fraction": 0.1}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join(repoRoot(), "configs", tc.file)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var rc struct {
				Model map[string]any `json:"model_config"`
				Data  map[string]any `json:"data_config"`
				Train map[string]any `json:"train"`
			}
			if err := json.Unmarshal(b, &rc); err != nil {
				t.Fatal(err)
			}
			for what, want := range map[string][2]map[string]any{"model_config": {rc.Model, merge(gpt, tc.model)}, "train": {rc.Train, merge(opt, tc.train)}, "data_config": {rc.Data, tc.data}} {
				for k, v := range want[1] {
					if !reflect.DeepEqual(want[0][k], v) {
						t.Errorf("%s: %s.%s = %v, nanoGPT's is %v", tc.file, what, k, want[0][k], v)
					}
				}
			}
			if _, ok := rc.Model["vocab"]; ok {
				t.Errorf("%s: model_config.vocab is the data's: leave it out", tc.file)
			}
			dir := t.TempDir()
			text := filepath.Join(dir, "input.txt")
			if err := os.WriteFile(text, []byte(strings.Repeat("First Citizen:\nBefore we proceed any further, hear me speak.\n\n", 60)), 0o644); err != nil {
				t.Fatal(err)
			}
			run := filepath.Join(dir, "run")
			code, _, stderr := runCLI(t, "train", "-config", path, "-data", text, "-steps", "2", "-batch", "2", "-eval-iters", "1", "-out", run)
			if code != 0 {
				t.Fatalf("train -config %s -data: exit %d\n%s", tc.file, code, stderr)
			}
			saved, err := os.ReadFile(filepath.Join(run, runConfigFile))
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Model map[string]any `json:"model_config"`
			}
			if err := json.Unmarshal(saved, &got); err != nil {
				t.Fatal(err)
			}
			if got.Model["vocab"] != 27.0 || got.Model["dim"] != tc.model["dim"] || got.Model["tied"] != true {
				t.Errorf("the run's model_config %v: want the recipe's, with the text's 27 symbols as vocab", got.Model)
			}
		})
	}
}

func merge(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
