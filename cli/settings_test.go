package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/locusml/locus/train"
)

// tiny is a model and task small enough for tests of the training settings.
var tiny = []string{"-task", "sort", "-seqlen", "6", "-layers", "1", "-dmodel", "16", "-heads", "2", "-dff", "32", "-batch", "8", "-eval-every", "10", "-eval-n", "16"}

func mustTrain(t *testing.T, args ...string) string {
	t.Helper()
	code, stdout, stderr := runCLI(t, append([]string{"train"}, args...)...)
	if code != 0 {
		t.Fatalf("%v: exit %d\n%s", args, code, stderr)
	}
	return stdout
}

func readWeights(t *testing.T, dir string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, train.ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestOptimizersResumeBitIdentical trains with every optimizer, and schedules with
// warm-up, clipping and accumulation: 20 steps straight and 10 steps then a resume to
// 20 (settings left out on resume keep the checkpoint's) write the same weights.
func TestOptimizersResumeBitIdentical(t *testing.T) {
	for _, tc := range [][]string{
		{"-optim", "sgd", "-lr", "0.05", "-momentum", "0.5", "-wd", "1e-4", "-threads", "1"},
		{"-optim", "nesterov", "-lr", "0.05", "-schedule", "step", "-decay-every", "7", "-gamma", "0.5"},
		{"-optim", "adam", "-betas", "0.8,0.99", "-eps", "1e-7", "-clip", "0.5"},
		{"-optim", "adamw", "-wd", "0.1", "-decay-params", "matrices", "-schedule", "cosine", "-warmup", "5", "-decay-steps", "15", "-min-lr", "1e-4"},
		{"-optim", "rmsprop", "-lr", "1e-3", "-alpha", "0.9", "-momentum", "0.1", "-schedule", "exponential", "-gamma", "0.97", "-accum", "2"},
		{"-optim", "adagrad", "-lr", "0.05", "-warmup", "3", "-dtype", "float64"},
	} {
		t.Run(tc[1], func(t *testing.T) {
			base := t.TempDir()
			a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
			mustTrain(t, append(append([]string{"-steps", "20", "-out", a}, tiny...), tc...)...)
			mustTrain(t, append(append([]string{"-steps", "10", "-out", b}, tiny...), tc...)...)
			mustTrain(t, "-steps", "20", "-resume", b)
			if !bytes.Equal(readWeights(t, filepath.Join(a, "step-000020")), readWeights(t, filepath.Join(b, "step-000020"))) {
				t.Fatal("resumed run's weights differ from the uninterrupted run's")
			}
			var rc struct {
				Train map[string]any `json:"train"`
			}
			raw, err := os.ReadFile(filepath.Join(b, runConfigFile))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(raw, &rc); err != nil || rc.Train["optimizer"] != tc[1] || rc.Train["steps"] != 20.0 {
				t.Fatalf("config.json train settings %v (%v)", rc.Train, err)
			}
			if slices.Contains(tc, "matrices") && rc.Train["decay_params"] != "matrices" {
				t.Fatalf("resumed run's decay_params %v, want the checkpoint's matrices", rc.Train["decay_params"])
			}
		})
	}
}

// TestSettingsFlags checks the defaults and the refusals of the settings flags.
func TestSettingsFlags(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	mustTrain(t, append([]string{"-steps", "2", "-out", dir}, tiny...)...)
	rc, err := readRunConfig(filepath.Join(dir, runConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(rc.Train, &st); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"optimizer": "adam", "lr": 1e-3, "betas": "0.9,0.999", "eps": 1e-8, "weight_decay": 0.0, "decay_params": "all", "schedule": "constant", "accum": 1.0, "best": "val_loss", "dtype": "float32"} {
		if st[k] != want {
			t.Errorf("default %s = %v, want %v", k, st[k], want)
		}
	}
	if _, ok := st["momentum"]; ok {
		t.Errorf("adam run saves a momentum: %v", st)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-optim", "lbfgs"}, `unknown optimizer "lbfgs" (valid: sgd, nesterov, adam, adamw, rmsprop, adagrad)`},
		{[]string{"-optim", "sgd", "-betas", "0.9,0.99"}, "-betas is for adam and adamw"},
		{[]string{"-betas", "0.9"}, "want two numbers"},
		{[]string{"-schedule", "linear"}, `unknown schedule "linear"`},
		{[]string{"-schedule", "exponential"}, "-schedule exponential needs -gamma"},
		{[]string{"-schedule", "step"}, "-schedule step needs -decay-every"},
		{[]string{"-eps", "0"}, "-eps 0: want a finite value > 0"},
		{[]string{"-optim", "adagrad", "-eps", "0"}, "-eps 0: want a finite value > 0"},
		{[]string{"-schedule", "step", "-decay-every", "0"}, "-decay-every 0: want > 0"},
		{[]string{"-schedule", "step", "-decay-every", "5", "-gamma", "0"}, "-gamma 0: want a finite value > 0"},
		{[]string{"-schedule", "exponential", "-gamma", "0"}, "-gamma 0: want a finite value > 0"},
		{[]string{"-optim", "rmsprop", "-alpha", "0"}, "-alpha 0: want a value in (0, 1]"},
		{[]string{"-betas", "0.9,0"}, "-betas 0.9,0: β2 0, want a value in (0, 1)"},
		{[]string{"-min-lr", "1e-4"}, "-min-lr is for -schedule cosine"},
		{[]string{"-decay-params", "matrices"}, "-decay-params matrices needs a weight decay: -wd is 0"},
		{[]string{"-optim", "adamw", "-decay-params", "rank2"}, `decay params "rank2": want all or matrices`},
		{[]string{"-accum", "0"}, "-accum must be in 1..4096, got 0"},
		{[]string{"-dtype", "float16"}, `dtype "float16"`},
		{[]string{"-best-mode", "up"}, "want min or max"},
		{[]string{"-resume", dir, "-optim", "sgd"}, "-optim sgd differs from the checkpoint's adam"},
		{[]string{"-resume", dir, "-config", filepath.Join(dir, runConfigFile)}, "do not go together"},
	} {
		code, _, stderr := runCLI(t, append([]string{"train", "-steps", "2"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, %q; want exit 2 and one line with %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestPatienceStopsEarly: with a learning rate of ~0, the validation loss cannot keep
// improving, so -patience 1 stops the run long before -steps.
func TestPatienceStopsEarly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	out := mustTrain(t, append([]string{"-steps", "1000", "-eval-every", "2", "-patience", "1", "-optim", "sgd", "-lr", "1e-12", "-best", "val_token_acc", "-best-mode", "max", "-out", dir}, tiny...)...)
	if !strings.Contains(out, "stopped early: best val_token_acc") {
		t.Fatalf("no early stop:\n%s", out)
	}
	ck, err := train.LoadCheckpoint(dir)
	if err != nil || ck.Step >= 100 {
		t.Fatalf("stopped at %v (%v)", ck, err)
	}
}

// TestConfigReproducesRun: a run started from another run's config.json writes the
// same weights byte for byte; flags given override the file; typos are named.
func TestConfigReproducesRun(t *testing.T) {
	base := t.TempDir()
	x, y, z := filepath.Join(base, "x"), filepath.Join(base, "y"), filepath.Join(base, "z")
	mustTrain(t, append([]string{"-steps", "12", "-out", x, "-optim", "adamw", "-schedule", "cosine", "-warmup", "3", "-seed", "7"}, tiny...)...)
	cfg := filepath.Join(x, runConfigFile)
	mustTrain(t, "-config", cfg, "-out", y)
	if !bytes.Equal(readWeights(t, filepath.Join(x, "step-000012")), readWeights(t, filepath.Join(y, "step-000012"))) {
		t.Fatal("-config run's weights differ from the original run's")
	}
	// Overrides: a model flag and a setting.
	mustTrain(t, "-config", cfg, "-out", z, "-steps", "4", "-dmodel", "8")
	ck, err := train.LoadCheckpoint(z)
	if err != nil || ck.Step != 4 || ck.Params["tok_emb.weight"].Shape()[1] != 8 {
		t.Fatalf("overridden run: %v, %v", ck, err)
	}
	raw, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// A setting no flag sets is kept when no model flag is given, and refused (not
	// dropped) when one is.
	edited := filepath.Join(base, "edited.json")
	if err := os.WriteFile(edited, bytes.Replace(raw, []byte(`"activation": "gelu_tanh"`), []byte(`"activation": "gelu_tanh", "tiling": "never"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	mustTrain(t, "-config", edited, "-out", filepath.Join(base, "never"), "-steps", "2")
	ck, err = train.LoadCheckpoint(filepath.Join(base, "never"))
	if err != nil {
		t.Fatal(err)
	}
	var model map[string]any
	if err := json.Unmarshal(ck.ModelConfig, &model); err != nil || model["tiling"] != "never" {
		t.Fatalf("edited run file: model config %s (%v)", ck.ModelConfig, err)
	}
	if code, _, stderr := runCLI(t, "train", "-config", edited, "-out", filepath.Join(base, "never2"), "-layers", "2"); code != 2 || !strings.Contains(stderr, "model_config sets tiling, which no flag does") {
		t.Errorf("model flag over an edited run file: exit %d, %q", code, stderr)
	}
	for _, tc := range []struct{ from, to, want string }{
		{`"warmup"`, `"warmpu"`, `bad.json: unknown key "train.warmpu" (did you mean "train.warmup"?)`},
		{`"heads"`, `"head"`, `unknown key "model_config.head" (did you mean "model_config.heads"?)`},
		{`"corrupt_rate"`, `"corrupt_rat"`, `unknown key "data_config.task_config.corrupt_rat" (did you mean "data_config.task_config.corrupt_rate"?)`},
		{`"model_family"`, `"model_famliy"`, `unknown key "model_famliy" (did you mean "model_family"?)`},
	} {
		bad := filepath.Join(base, "bad.json")
		if err := os.WriteFile(bad, bytes.Replace(raw, []byte(tc.from), []byte(tc.to), 1), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := runCLI(t, "train", "-config", bad, "-out", filepath.Join(base, "bad"))
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("typo %s: exit %d, %q; want %q", tc.to, code, stderr, tc.want)
		}
	}
}

// TestResumeOldTrainConfig resumes a checkpoint whose train_config predates the
// optimizer settings (steps, lr, eval_every, eval_n, keep): it is Adam with the defaults,
// bit-identical to an uninterrupted run.
func TestResumeOldTrainConfig(t *testing.T) {
	base := t.TempDir()
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	mustTrain(t, append([]string{"-steps", "20", "-out", a}, tiny...)...)
	mustTrain(t, append([]string{"-steps", "10", "-out", b}, tiny...)...)
	meta := filepath.Join(b, "step-000010", train.MetaFile)
	raw, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m["train_config"] = json.RawMessage(`{"steps":10,"lr":0.001,"eval_every":10,"eval_n":16,"keep":3}`)
	if raw, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(meta, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	mustTrain(t, "-steps", "20", "-resume", b)
	if !bytes.Equal(readWeights(t, filepath.Join(a, "step-000020")), readWeights(t, filepath.Join(b, "step-000020"))) {
		t.Fatal("resumed run's weights differ from the uninterrupted run's")
	}
}
