package cli

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/locusml/locus/internal/ortrun"
	"github.com/locusml/locus/train"
)

// TestUserModule builds examples/custom_task, a module of its own with a task
// (localmax) and a model family (kattn) that Locus does not have, as a user's project
// outside the repository (a copy in a temporary folder whose replace line points here),
// and runs every locus command on them through its binary: train, resume, eval, inspect
// in every mode, report, export in every format (torch refused with a reason), sample
// (refused: not a character LM).
func TestUserModule(t *testing.T) {
	repo := repoRoot()
	mod := filepath.Join(t.TempDir(), "localmax")
	copyTree(t, filepath.Join(repo, "examples", "custom_task"), mod)
	gomod := filepath.Join(mod, "go.mod")
	b, err := os.ReadFile(gomod)
	if err != nil {
		t.Fatal(err)
	}
	b = []byte(strings.Replace(string(b), "=> ../..", "=> "+repo, 1))
	if err := os.WriteFile(gomod, b, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(mod, "mylocus")
	goBuild(t, mod, bin)
	run := func(wantCode int, args ...string) (stdout, stderr string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = mod
		var o, e strings.Builder
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != wantCode {
			t.Fatalf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, wantCode, o.String(), e.String())
		}
		return o.String(), e.String()
	}
	metric := func(out, name string) float64 {
		t.Helper()
		m := regexp.MustCompile(name+`\s+([0-9.]+)`).FindAllStringSubmatch(out, -1)
		if m == nil {
			t.Fatalf("no %s in:\n%s", name, out)
		}
		v, _ := strconv.ParseFloat(m[len(m)-1][1], 64)
		return v
	}

	// -h lists the user's family and task beside the built-in ones.
	if _, help := run(0, "train", "-h"); !strings.Contains(help, "registered family: dae, kattn, ldae, transformer") || !strings.Contains(help, "localmax") {
		t.Errorf("train -h does not list the user's family and task:\n%s", help)
	}
	// train: the user's task and family from the flags, with learned per-head bandwidths.
	out, _ := run(0, "train", "-model", "kattn", "-task", "localmax", "-bandwidth", "head", "-steps", "300", "-eval-every", "100", "-eval-n", "500", "-out", "runs/lm")
	if acc := metric(out, "val seq_acc"); acc < 0.95 {
		t.Errorf("train: val seq_acc %.3f, want >= 0.95 (a window of five and the exponential kernel solve localmax)\n%s", acc, out)
	}
	if !strings.Contains(out, "bandwidth attn.bandwidth = [") {
		t.Errorf("train does not print the learned bandwidths:\n%s", out)
	}
	// resume, and a new run from the run file.
	run(0, "train", "-resume", "runs/lm", "-steps", "320")
	run(0, "train", "-config", "runs/lm/config.json", "-steps", "20", "-out", "runs/again")
	if _, stderr := run(2, "train", "-model", "kattn", "-task", "localmax", "-layers", "3", "-out", "runs/layers"); !strings.Contains(stderr, "-layers 3 is not used by -model kattn") {
		t.Errorf("a flag the family does not use: %s", stderr)
	}
	if _, stderr := run(2, "train", "-resume", "runs/lm", "-steps", "340", "-heads", "2"); !strings.Contains(stderr, "-heads 2 differs from the checkpoint's 4") {
		t.Errorf("resume with another -heads: %s", stderr)
	}

	out, _ = run(0, "eval", "-ckpt", "runs/lm")
	if !strings.Contains(out, "kattn, 64 wide, 4 heads, kernel exponential * window(3), bandwidth head") || metric(out, "seq_acc") < 0.95 {
		t.Errorf("eval:\n%s", out)
	}

	out, _ = run(0, "inspect", "-ckpt", "runs/lm")
	for _, want := range []string{"model family kattn", `"task": "localmax"`, "attn.q.weight", "step 320"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect lacks %q:\n%s", want, out)
		}
	}
	out, _ = run(0, "inspect", "-ckpt", "runs/lm", "-attention", "-input", "0 1 7 2 3 0 0 5", "-kernels", "-bandwidths", "-out", "pics")
	for _, want := range []string{"learned bandwidths by layer and head", "wrote pics/attention.png", "wrote pics/kernels.png", "wrote pics/attention.json"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect -attention -kernels -bandwidths lacks %q:\n%s", want, out)
		}
	}
	var view attentionView
	if b, err := os.ReadFile(filepath.Join(mod, "pics", "attention.json")); err != nil || json.Unmarshal(b, &view) != nil {
		t.Fatalf("attention.json: %v", err)
	}
	if len(view.Maps) != 4 || view.Input != "0 1 7 2 3 0 0 5" || len(view.Maps[0].Weights) != 8 {
		t.Fatalf("attention.json: %d maps for input %q, want 4 heads over 8 symbols", len(view.Maps), view.Input)
	}
	// The window hides every key more than two positions away.
	for _, am := range view.Maps {
		for q, row := range am.Visible {
			for k, vis := range row {
				if vis != (k-q <= 2 && q-k <= 2) {
					t.Fatalf("head %d: query %d key %d visible %v under window(3)", am.Head, q, k, vis)
				}
			}
		}
	}

	out, _ = run(0, "report", "-ckpt", "runs/lm", "-out", "report.html")
	page, err := os.ReadFile(filepath.Join(mod, "report.html"))
	// The page shows the user's model: its loss curve, learned bandwidths, kernel profile
	// and attention maps, and the task's metrics.
	if err != nil || !strings.Contains(out, "wrote report.html") || !strings.Contains(out, "4 pictures") ||
		strings.Count(string(page), "<img") != 4 || !strings.Contains(string(page), "kattn") || !strings.Contains(string(page), "val_seq_acc") {
		t.Errorf("report: %v, %d pictures in the page\n%s", err, strings.Count(string(page), "<img"), out)
	}

	out, _ = run(0, "export", "-ckpt", "runs/lm", "-format", "safetensors", "-out", "lm.safetensors")
	if _, meta, err := train.ReadSafetensors(filepath.Join(mod, "lm.safetensors")); err != nil || meta[train.MetaFamily] != "kattn" {
		t.Errorf("export safetensors: %v, metadata %v\n%s", err, meta, out)
	}
	out, _ = run(0, "export", "-ckpt", "runs/lm", "-format", "onnx", "-out", "lm.onnx")
	if !strings.Contains(out, "ids int64 [batch, seq]; logits float32 [batch, seq, 8]") {
		t.Errorf("export onnx:\n%s", out)
	}
	if _, stderr := run(1, "export", "-ckpt", "runs/lm", "-format", "torch", "-out", "lm.pt"); !strings.Contains(stderr, "a kattn model has none") {
		t.Errorf("export torch: %s", stderr)
	}
	if _, stderr := run(1, "sample", "-ckpt", "runs/lm"); !strings.Contains(stderr, "sample needs a character LM checkpoint") {
		t.Errorf("sample: %s", stderr)
	}

	// The exported ONNX model, run in onnxruntime, solves the task.
	if ortrun.Available() != nil && os.Getenv(ortrun.RequireEnv) == "" {
		t.Log("onnxruntime missing: the exported model was not run")
		return
	}
	ortrun.CheckFiles(t, filepath.Join(mod, "lm.onnx"))
	in := []int64{0, 1, 7, 2, 3, 0, 0, 5, 4, 4, 1, 0, 0, 0, 6, 2}
	res, err := ortrun.Run(filepath.Join(mod, "lm.onnx"), map[string]ortrun.Tensor{"ids": {Dims: []int{1, len(in)}, Ints: in}})
	if err != nil {
		t.Fatal(err)
	}
	logits := res["logits"].Floats
	for i := range in {
		want := int64(0)
		for j := max(0, i-2); j <= min(len(in)-1, i+2); j++ {
			want = max(want, in[j])
		}
		row := logits[i*8 : (i+1)*8]
		best := 0
		for c := range row {
			if row[c] > row[best] {
				best = c
			}
		}
		if int64(best) != want {
			t.Errorf("onnxruntime: position %d predicts %d, want %d", i, best, want)
		}
	}
}

// repoRoot is the repository's root folder.
func repoRoot() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(here))
}

// goBuild builds the module in dir into bin, skipping the test without a go command.
func goBuild(t *testing.T, dir, bin string) {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build a module of a user's")
	}
	build := exec.Command(goBin, "build", "-o", bin, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build in %s: %v\n%s", dir, err, out)
	}
}

// copyTree copies the module's sources under src to dst: go.mod, go.sum and the Go
// files (not what running it left there: runs, pictures, binaries).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			if name := d.Name(); path != src && (name == "runs" || name == "pics" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if name := d.Name(); name != "go.mod" && name != "go.sum" && !strings.HasSuffix(name, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
