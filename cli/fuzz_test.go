package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzReadRunConfig: any file given to train -config is read and taken into the flags
// (what -config does before anything is built) or refused with one line, quickly, never
// a panic or a stack overflow. The seeds are a real run file and the run-file inputs of
// issue 36: deep nesting, a huge mixture, null and non-finite values, unknown keys.
func FuzzReadRunConfig(f *testing.F) {
	valid := `{"versions":{"format":1},"model_family":"transformer",` +
		`"model_config":{"arch":"lm","vocab":11,"max_len":16,"dim":8,"heads":2,"layers":1,"hidden":16,"kernel":"gaussian * window(4)","bandwidth":"fixed","positions":"learned","post_ln":false,"tied":false,"activation":"gelu_tanh","dropout":0,"init":"gpt"},` +
		`"data_config":{"task":"reverse","batch":4,"seed":1},` +
		`"train":{"steps":10,"optimizer":"adam","lr":0.001,"clip":0,"accum":1,"eval_every":5,"eval_n":16}}`
	for _, s := range []string{
		valid,
		strings.Replace(valid, `"gaussian * window(4)"`, `"`+strings.Repeat("(", 100_000)+"gaussian"+strings.Repeat(")", 100_000)+`"`, 1),
		strings.Replace(valid, `"gaussian * window(4)"`, `"mixture(`+strings.Repeat("exponential, ", 10_000)+`exponential)"`, 1),
		strings.Replace(valid, `"clip":0`, `"clip":"Inf"`, 1),
		strings.Replace(valid, `"accum":1`, `"accum":9223372036854775807`, 1),
		strings.Replace(valid, `"eval_n":16`, `"eval_n":2000000000`, 1),
		strings.Replace(valid, `"max_len":16`, `"max_len":1e9`, 1),
		strings.Replace(valid, `"model_config":{`, `"model_config":null,"x":{`, 1),
		strings.Replace(valid, `"arch":"lm"`, `"arch":"lm","random_features":4611686018427387904`, 1),
		strings.Replace(valid, `"steps":10`, `"steps":10,"stepz":1`, 1),
		strings.Repeat("[", 100_000),
		`{"model_family":"gpt","model_config":{}}`,
		`{"model_family":"dae","model_config":{"kind":"mlp","in":4,"hidden":[2]}}`,
		"",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(dir, "config.json")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		err := takeRunFile(path)
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("took %v", d)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("error of more than one line: %.500q", err)
		}
	})
}

// takeRunFile does what train -config does with a run file before it builds anything.
func takeRunFile(path string) error {
	rc, err := readRunConfig(path)
	if err != nil {
		return err
	}
	fam := families[rc.Family]
	if fam == nil {
		return nil
	}
	fs := newFlagSet("train", "", os.Stderr)
	f := &trainFlags{ModelFlags: ModelFlags{set: map[string]bool{}}}
	defineTrainFlags(fs, f)
	if _, err := f.takeFrom(fs, savedRun{fam, rc.ModelConfig, rc.DataConfig, rc.Train, path}, false); err != nil {
		return err
	}
	return f.validate()
}
