package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNanoGPTDataConventions: -val-fraction (the tail split) and -eval-iters (train_loss
// and val_loss, each the mean of N batches) are saved with the run, logged under
// nanoGPT's names, printed, kept on resume, and refused where they do not apply.
func TestNanoGPTDataConventions(t *testing.T) {
	base := t.TempDir()
	text := filepath.Join(base, "text.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("To be, or not to be: that is the question.\n", 20)), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "run")
	lm := []string{"-task", "charlm", "-data", text, "-seqlen", "8", "-layers", "1", "-dmodel", "8", "-heads", "2", "-dff", "16", "-batch", "4"}
	out := mustTrain(t, append(lm, "-steps", "4", "-eval-every", "2", "-val-fraction", "0.1", "-eval-iters", "3", "-out", dir)...)
	if !strings.Contains(out, "  train_loss ") || !strings.Contains(out, "  val loss ") || strings.Contains(out, "val train_loss") {
		t.Errorf("summary lacks train_loss and val loss:\n%s", out)
	}
	f, err := os.Open(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	evals := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var r map[string]any
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if _, ok := r["val_loss"]; ok {
			evals++
			if _, ok := r["train_loss"]; !ok {
				t.Errorf("record %s has val_loss without train_loss", sc.Text())
			}
		}
		if _, ok := r["val_train_loss"]; ok {
			t.Errorf("record %s has val_train_loss", sc.Text())
		}
	}
	if evals != 2 {
		t.Errorf("%d evaluations logged, want 2 (steps 2 and 4)", evals)
	}
	rc, err := readRunConfig(filepath.Join(dir, runConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	var data struct {
		ValFraction float64 `json:"val_fraction"`
	}
	var st struct {
		EvalIters int `json:"eval_iters"`
	}
	if json.Unmarshal(rc.DataConfig, &data) != nil || json.Unmarshal(rc.Train, &st) != nil || data.ValFraction != 0.1 || st.EvalIters != 3 {
		t.Errorf("config.json: data %s, train %s; want val_fraction 0.1 and eval_iters 3", rc.DataConfig, rc.Train)
	}
	// A resume keeps both; -val-fraction is data, fixed for the run.
	mustTrain(t, "-resume", dir, "-steps", "6")
	rc, _ = readRunConfig(filepath.Join(dir, runConfigFile))
	if json.Unmarshal(rc.DataConfig, &data) != nil || json.Unmarshal(rc.Train, &st) != nil || data.ValFraction != 0.1 || st.EvalIters != 3 {
		t.Errorf("resumed config.json: data %s, train %s; want val_fraction 0.1 and eval_iters 3", rc.DataConfig, rc.Train)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-resume", dir, "-steps", "8", "-val-fraction", "0.2"}, "-val-fraction 0.2 differs from the checkpoint's 0.1"},
		{append(lm, "-val-fraction", "1"), "-val-fraction 1: want a fraction in (0, 1)"},
		{[]string{"-task", "sort", "-val-fraction", "0.1"}, "-val-fraction is for -task charlm"},
		{[]string{"-task", "sort", "-eval-iters", "5"}, "-eval-iters is for -task charlm"},
		{[]string{"-model", "dae", "-eval-iters", "5"}, "-eval-iters is for -task charlm"},
		{[]string{"-eval-iters", "-1"}, "-eval-iters must be in 0..16384, got -1"},
	} {
		code, _, stderr := runCLI(t, append([]string{"train", "-steps", "2", "-out", filepath.Join(base, "refused")}, tc.args...)...)
		// (a resume first names the corpus it reads, on a line of its own)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code != 2 || !strings.Contains(lines[len(lines)-1], tc.want) || len(lines) > 1 && tc.args[0] != "-resume" {
			t.Errorf("%v: exit %d, %q; want exit 2 and one error line with %q", tc.args, code, stderr, tc.want)
		}
	}
}
