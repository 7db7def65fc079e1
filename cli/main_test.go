package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/models/transformer"
	"github.com/locusml/locus/train"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = Main(args, &o, &e)
	return code, o.String(), e.String()
}

func TestBadInputGetsOneLine(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"bogus"}, 2, `unknown command "bogus"`},
		{[]string{"train", "-kernel", "foo"}, 2, `unknown kernel "foo"`},
		{[]string{"train", "-steps", "-3"}, 2, "-steps must be > 0"},
		{[]string{"train", "-task", "nope"}, 2, `unknown -task "nope"`},
		{[]string{"train", "-bandwidth", "wide"}, 2, `unknown bandwidth mode "wide"`},
		{[]string{"train", "-kernel", "gaussian * windw(8)"}, 2, `at column 12: unknown kernel "windw"`},
		{[]string{"train", "-kernel", "gaussian * laplacian"}, 2, "at most one content kernel"},
		{[]string{"train", "-model", "ldae", "-kernel", "window(0)"}, 2, "window width W = 0"},
		{[]string{"train", "-model", "nope"}, 2, `unknown -model "nope"`},
		{[]string{"train", "-dmodel", "1000000", "-steps", "1"}, 2, "dim 1000000"},
		{[]string{"train", "-resume", filepath.Join(dir, "missing")}, 1, "no such file"},
		{[]string{"train", "-corrupt-rate", "0.2"}, 2, "-corrupt-rate and -corrupt-mode are for the denoise-* tasks"},
		{[]string{"train", "-task", "denoise-reverse", "-corrupt-mode", "blur"}, 2, `unknown CorruptMode "blur"`},
		{[]string{"train", "-task", "denoise-sort", "-corrupt-rate", "1.5"}, 2, "CorruptRate=1.5 must be in (0, 1]"},
		{[]string{"eval"}, 2, "missing -ckpt"},
		{[]string{"eval", "-ckpt", filepath.Join(dir, "missing")}, 1, "no such file"},
		{[]string{"export", "-ckpt", dir}, 2, "missing -out"},
	} {
		code, _, stderr := runCLI(t, tc.args...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		last := lines[len(lines)-1]
		if code != tc.code || !strings.Contains(last, tc.want) {
			t.Errorf("%v: exit %d, last line %q; want exit %d and %q", tc.args, code, last, tc.code, tc.want)
		}
		if strings.Contains(stderr, "goroutine") {
			t.Errorf("%v: panic trace in output:\n%s", tc.args, stderr)
		}
	}
}

// TestTrainEvalExportInspect runs the CLI end to end on a tiny model.
func TestTrainEvalExportInspect(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	small := []string{"-task", "reverse", "-seqlen", "6", "-layers", "1", "-dmodel", "16", "-heads", "2", "-dff", "32", "-batch", "16", "-eval-every", "10", "-eval-n", "50", "-out", dir}
	code, stdout, stderr := runCLI(t, append([]string{"train", "-steps", "20"}, small...)...)
	if code != 0 {
		t.Fatalf("train: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "checkpoint: ") {
		t.Fatalf("train output lacks the checkpoint line:\n%s", stdout)
	}
	// Training again into the same directory without -resume is refused.
	if code, _, stderr := runCLI(t, append([]string{"train", "-steps", "20"}, small...)...); code != 2 || !strings.Contains(stderr, "-resume") {
		t.Fatalf("second train into %s: exit %d, %q", dir, code, stderr)
	}
	// Resume continues to 30 steps.
	if code, _, stderr := runCLI(t, append([]string{"train", "-steps", "30", "-resume", dir}, small[:len(small)-2]...)...); code != 0 {
		t.Fatalf("resume: exit %d\n%s", code, stderr)
	}
	ck, err := train.LoadCheckpoint(dir)
	if err != nil || ck.Step != 30 {
		t.Fatalf("after resume: step %v, err %v", ck, err)
	}

	code, stdout, stderr = runCLI(t, "eval", "-ckpt", dir, "-n", "50", "-json")
	if code != 0 {
		t.Fatalf("eval: exit %d\n%s", code, stderr)
	}
	var met map[string]float64
	if err := json.Unmarshal([]byte(stdout), &met); err != nil {
		t.Fatalf("eval -json output %q: %v", stdout, err)
	}
	for _, k := range []string{"loss", "token_acc", "seq_acc"} {
		if _, ok := met[k]; !ok {
			t.Errorf("eval -json lacks %q: %v", k, met)
		}
	}

	out := filepath.Join(t.TempDir(), "model.safetensors")
	if code, _, stderr := runCLI(t, "export", "-ckpt", dir, "-out", out); code != 0 {
		t.Fatalf("export: exit %d\n%s", code, stderr)
	}
	tensors, _, err := train.ReadSafetensors(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tok_emb.weight", "pos_emb.weight", "blocks.0.attn.q.weight", "ln_f.weight", "head.weight", "head.bias"} {
		if _, ok := tensors[name]; !ok {
			t.Errorf("export lacks %s", name)
		}
	}
	if s := tensors["blocks.0.attn.q.weight"].Shape(); s[0] != 16 || s[1] != 16 {
		t.Errorf("q weight shape %v", s)
	}
	if s := tensors["head.weight"].Shape(); s[0] != 10 || s[1] != 16 {
		t.Errorf("head weight shape %v, want [10 16] ([out, in])", s)
	}

	png := filepath.Join(t.TempDir(), "loss.png")
	code, stdout, stderr = runCLI(t, "inspect", "-ckpt", dir, "-plot", png)
	if code != 0 || !strings.Contains(stdout, "blocks.0.ffn.fc1.weight") {
		t.Fatalf("inspect: exit %d\n%s%s", code, stdout, stderr)
	}
	if b, err := os.ReadFile(png); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatalf("inspect -plot: %v", err)
	}

	// A corrupted checkpoint is reported with the file's name.
	if err := os.WriteFile(filepath.Join(ck.Dir, train.ModelFile), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCLI(t, "eval", "-ckpt", ck.Dir)
	if code != 1 || !strings.Contains(stderr, train.ModelFile) {
		t.Fatalf("eval of a corrupted checkpoint: exit %d, %q", code, stderr)
	}
}

// TestEveryTaskTrains runs a few steps of every toy task, encoder and causal LM.
func TestEveryTaskTrains(t *testing.T) {
	for _, task := range []string{"copy", "reverse", "sort", "addition", "modular", "parity", "recall", "dyck1", "dyck2", "denoise-reverse"} {
		for _, arch := range []string{"encoder", "lm"} {
			dir := filepath.Join(t.TempDir(), task+arch)
			code, _, stderr := runCLI(t, "train", "-task", task, "-arch", arch, "-steps", "2", "-layers", "1", "-dmodel", "8",
				"-heads", "2", "-dff", "16", "-batch", "4", "-eval-n", "8", "-out", dir)
			if code != 0 {
				t.Errorf("%s %s: exit %d\n%s", task, arch, code, stderr)
			}
		}
	}
}

// TestDenoiseFromCLI trains a sequence DAE with the corruption flags; the checkpoint
// keeps them, so eval rebuilds the same task.
func TestDenoiseFromCLI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dae")
	code, _, stderr := runCLI(t, "train", "-task", "denoise-copy", "-seqlen", "6", "-corrupt-rate", "0.25", "-corrupt-mode", "substitute",
		"-steps", "2", "-layers", "1", "-dmodel", "8", "-heads", "2", "-dff", "16", "-batch", "4", "-eval-n", "8", "-out", dir)
	if code != 0 {
		t.Fatalf("train: exit %d\n%s", code, stderr)
	}
	ck, err := train.LoadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	var d transformer.DataConfig
	if err := json.Unmarshal(ck.DataConfig, &d); err != nil {
		t.Fatal(err)
	}
	if want := (datasets.TaskConfig{SeqLen: 6, CorruptRate: 0.25, CorruptMode: "substitute"}); d.TaskConfig != want {
		t.Errorf("saved task config %+v, want %+v", d.TaskConfig, want)
	}
	code, stdout, stderr := runCLI(t, "eval", "-ckpt", dir, "-n", "8", "-json")
	if code != 0 {
		t.Fatalf("eval: exit %d\n%s", code, stderr)
	}
	var met map[string]float64
	if err := json.Unmarshal([]byte(stdout), &met); err != nil {
		t.Fatalf("eval -json output %q: %v", stdout, err)
	}
	if _, ok := met["seq_acc"]; !ok {
		t.Errorf("eval -json lacks seq_acc: %v", met)
	}
}

func TestMethodsCSV(t *testing.T) {
	dir := t.TempDir()
	pts := filepath.Join(dir, "points.csv")
	if err := os.WriteFile(pts, []byte("x,y\n0,0\n0.1,0\n0,0.1\n5,5\n5.1,5\n5,5.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "meanshift", "-in", pts, "-bandwidth", "1")
	if code != 0 {
		t.Fatalf("meanshift: exit %d\n%s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 7 || lines[0] != "x,y,cluster" {
		t.Fatalf("meanshift output:\n%s", stdout)
	}
	first, last := lines[1][strings.LastIndex(lines[1], ",")+1:], lines[6][strings.LastIndex(lines[6], ",")+1:]
	if first == last || lines[2][len(lines[2])-1:] != first || lines[5][len(lines[5])-1:] != last {
		t.Errorf("meanshift labels do not split the two blobs:\n%s", stdout)
	}
	// nw keeps the header as meanshift does: the training file's, or the query file's.
	if code, stdout, stderr := runCLI(t, "nw", "-in", pts, "-bandwidth", "0.5"); code != 0 || len(strings.Split(strings.TrimSpace(stdout), "\n")) != 7 || !strings.HasPrefix(stdout, "x,y\n") {
		t.Fatalf("nw: exit %d\n%s%s", code, stdout, stderr)
	}
	query := filepath.Join(dir, "query.csv")
	if err := os.WriteFile(query, []byte("x\n0.05\n5.05\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := runCLI(t, "nw", "-in", pts, "-query", query, "-bandwidth", "0.5"); code != 0 || len(strings.Split(strings.TrimSpace(stdout), "\n")) != 3 || !strings.HasPrefix(stdout, "x,y\n0.05,") {
		t.Fatalf("nw -query: exit %d\n%s%s", code, stdout, stderr)
	}
	bad := filepath.Join(dir, "bad.csv")
	for _, tc := range []struct{ text, want string }{
		{"1,2\n3,abc\n", `line 2: column 2: "abc" is not a number`},
		{"1,2\n3,4,5\n", "line 2: has 3 columns, expected 2"},
	} {
		if err := os.WriteFile(bad, []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, cmd := range []string{"meanshift", "nw"} {
			code, _, stderr := runCLI(t, cmd, "-in", bad)
			if code != 1 || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "bad.csv") {
				t.Errorf("%s on %q: exit %d, %q; want %q", cmd, tc.text, code, stderr, tc.want)
			}
		}
	}
}

func TestDAEFromCLI(t *testing.T) {
	if _, err := datasets.DefaultMNISTDir(); err != nil {
		t.Skipf("MNIST not found: %v", err)
	}
	if code, _, stderr := runCLI(t, "train", "-model", "dae", "-task", "reverse"); code != 2 || !strings.Contains(stderr, "-task mnist goes with") {
		t.Errorf("dae on reverse: exit %d, %q", code, stderr)
	}
	dir := filepath.Join(t.TempDir(), "dae")
	code, stdout, stderr := runCLI(t, "train", "-model", "dae", "-steps", "30", "-eval-every", "15", "-eval-n", "200", "-out", dir)
	if code != 0 {
		t.Fatalf("train dae: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "denoised.png") {
		t.Errorf("no grid in output:\n%s", stdout)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "denoised.png")); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("denoised.png: %v", err)
	}
	code, stdout, stderr = runCLI(t, "eval", "-ckpt", dir, "-n", "200", "-json")
	if code != 0 {
		t.Fatalf("eval dae: exit %d\n%s", code, stderr)
	}
	var met map[string]float64
	if err := json.Unmarshal([]byte(stdout), &met); err != nil || met["mse_clean"] <= 0 || met["mse_noisy"] <= 0 {
		t.Fatalf("eval -json %q: %v", stdout, err)
	}
}

// TestResumeIsBitIdentical checks through the CLI that 20 steps in one run and 10 steps,
// then a resumed run to 20, write the same weights byte for byte.
func TestResumeIsBitIdentical(t *testing.T) {
	small := []string{"-task", "sort", "-seqlen", "6", "-layers", "1", "-dmodel", "16", "-heads", "2", "-dff", "32", "-batch", "8", "-eval-every", "10", "-eval-n", "16"}
	base := t.TempDir()
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	for _, args := range [][]string{
		append([]string{"train", "-steps", "20", "-out", a}, small...),
		append([]string{"train", "-steps", "10", "-out", b}, small...),
		append([]string{"train", "-steps", "20", "-resume", b}, small...),
	} {
		if code, _, stderr := runCLI(t, args...); code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, stderr)
		}
	}
	wa, err := os.ReadFile(filepath.Join(a, "step-000020", train.ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	wb, err := os.ReadFile(filepath.Join(b, "step-000020", train.ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(wa, wb) {
		t.Fatal("resumed run's weights differ from the uninterrupted run's")
	}
}
