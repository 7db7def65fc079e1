package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/models/transformer"
	"github.com/locusml/locus/train"
	"gorgonia.org/tensor"
)

// seqlenText writes a small corpus whose validation split (-val-fraction 0.25) holds
// windows of 128 tokens.
func seqlenText(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "text.txt")
	if err := os.WriteFile(path, []byte(strings.Repeat("the quick brown fox jumps over the lazy dog. pack my box! ", 80)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// trainCharLM trains a one-layer character LM at -seqlen 16 for a few steps.
func trainCharLM(t *testing.T, text, out string, extra ...string) {
	t.Helper()
	args := append([]string{"train", "-task", "charlm", "-data", text, "-val-fraction", "0.25", "-seqlen", "16", "-layers", "1", "-dmodel", "16",
		"-heads", "2", "-dff", "32", "-batch", "8", "-steps", "6", "-eval-every", "6", "-eval-n", "8", "-out", out}, extra...)
	if code, _, stderr := runCLI(t, args...); code != 0 {
		t.Fatalf("train %v: exit %d\n%s", extra, code, stderr)
	}
}

// evalJSON runs eval -json and returns its metrics.
func evalJSON(t *testing.T, args ...string) (map[string]float64, int, string) {
	t.Helper()
	code, stdout, stderr := runCLI(t, append([]string{"eval", "-json"}, args...)...)
	if code != 0 {
		return nil, code, stderr
	}
	var met map[string]float64
	if err := json.Unmarshal([]byte(stdout), &met); err != nil {
		t.Fatalf("eval %v: %v in %q", args, err, stdout)
	}
	return met, code, stderr
}

// TestEvalSeqLenEveryPositionEncoding: character LMs trained at -seqlen 16 with every
// position encoding evaluate at 4× the length (and at 1024) with finite metrics, those
// without positions beside an ALiBi-style distance kernel and a relbias(4) clamped past
// its range; learned positions evaluate within their table (-seqlen 8) and refuse 64 in
// one line naming -seqlen, 64 and the table's 16; the window kernel without positions
// gives a token the same loss at 16 and at 64 (checkLengthIndependent).
func TestEvalSeqLenEveryPositionEncoding(t *testing.T) {
	dir := t.TempDir()
	text := seqlenText(t, dir)
	for _, tc := range []struct {
		positions, kernel string
	}{
		{"learned", "exponential"},
		{"sinusoidal", "exponential"},
		{"rotary", "exponential * relbias(4)"},
		{"none", "exponential * distance(0.5)"},
		{"none", "exponential * window(8)"},
	} {
		name := tc.positions + "-" + strings.NewReplacer(" ", "", "*", "x", "(", "", ")", "").Replace(tc.kernel)
		t.Run(name, func(t *testing.T) {
			run := filepath.Join(dir, name)
			trainCharLM(t, text, run, "-positions", tc.positions, "-kernel", tc.kernel)
			lengths := []string{"8", "16", "64", "1024"}
			if tc.positions == "learned" {
				lengths = []string{"8", "16"}
			}
			for _, T := range lengths {
				n := "32"
				if T == "1024" {
					n = "2"
				}
				met, code, stderr := evalJSON(t, "-ckpt", run, "-seqlen", T, "-n", n)
				if code != 0 {
					t.Fatalf("eval -seqlen %s: exit %d\n%s", T, code, stderr)
				}
				for _, k := range []string{"loss", "bpc", "token_acc"} {
					if v, ok := met[k]; !ok || math.IsNaN(v) || math.IsInf(v, 0) {
						t.Errorf("eval -seqlen %s: %s = %v (present %v)", T, k, v, ok)
					}
				}
			}
			// The training length by -seqlen is the plain eval.
			plain, _, _ := evalJSON(t, "-ckpt", run, "-n", "32")
			same, _, _ := evalJSON(t, "-ckpt", run, "-n", "32", "-seqlen", "16")
			if plain["loss"] != same["loss"] {
				t.Errorf("eval -seqlen 16 (the training length): loss %v, eval without it %v", same["loss"], plain["loss"])
			}
			code, stdout, stderr := runCLI(t, "eval", "-ckpt", run, "-seqlen", "64", "-n", "16")
			if tc.positions == "learned" {
				msg := strings.TrimPrefix(stderr, "locus: reading the corpus "+text+" (data_config.corpus of "+filepath.Join(run, "step-000006")+")\n")
				if code == 0 || strings.Count(msg, "\n") != 1 || !strings.Contains(msg, "-seqlen 64") || !strings.Contains(msg, "rows of 64 tokens, but the position table has 16") {
					t.Errorf("learned positions at -seqlen 64: exit %d, want a one-line refusal naming -seqlen 64 and the table's 16:\n%s", code, stderr)
				}
				return
			}
			if code != 0 || !strings.Contains(stdout, "at seqlen 64):") {
				t.Errorf("eval -seqlen 64: exit %d, output does not say the length:\n%s%s", code, stdout, stderr)
			}
			if strings.Contains(tc.kernel, "window(8)") {
				checkLengthIndependent(t, run, 8)
			}
		})
	}
}

// TestEvalSeqLenRefusals: a -seqlen that no model or data can take is refused in one
// line naming it.
func TestEvalSeqLenRefusals(t *testing.T) {
	dir := t.TempDir()
	text := seqlenText(t, dir)
	run := filepath.Join(dir, "run")
	trainCharLM(t, text, run, "-positions", "none")
	for _, tc := range []struct {
		seqlen, want string
		code         int
	}{
		{"-1", "-seqlen must be in 0..1048576 (0: the training length), got -1", 2},
		{"2000000", "-seqlen must be in 0..1048576 (0: the training length), got 2000000", 2},
		{"100000", "-seqlen 100000: the corpus's validation split has", exitNotDefined},
	} {
		code, _, stderr := runCLI(t, "eval", "-ckpt", run, "-seqlen", tc.seqlen)
		last := strings.TrimSpace(stderr[strings.LastIndex(strings.TrimSpace(stderr), "\n")+1:])
		if code != tc.code || !strings.Contains(last, tc.want) {
			t.Errorf("-seqlen %s: exit %d, want %d and a line with %q:\n%s", tc.seqlen, code, tc.code, tc.want, stderr)
		}
	}
}

// TestEvalSeqLenToyTasks: toy tasks trained at their default length evaluate at twice it
// (addition at the digits that make it), as encoders and LMs: the examples are of
// that length, the metrics are reported; a length a task is not defined at is refused in
// one line.
func TestEvalSeqLenToyTasks(t *testing.T) {
	for _, tc := range []struct {
		task   string
		seqlen int // 2× the default
		archs  []string
	}{
		{"copy", 32, []string{"encoder"}}, {"reverse", 32, []string{"encoder", "lm"}}, {"sort", 32, []string{"encoder"}},
		{"parity", 32, []string{"encoder"}}, {"dyck1", 32, []string{"lm"}}, {"dyck2", 32, []string{"encoder"}},
		{"addition", 30, []string{"encoder", "lm"}},
	} {
		for _, arch := range tc.archs {
			run := filepath.Join(t.TempDir(), tc.task+arch)
			code, _, stderr := runCLI(t, "train", "-task", tc.task, "-arch", arch, "-positions", "none", "-kernel", "exponential * distance(0.5)",
				"-steps", "2", "-layers", "1", "-dmodel", "8", "-heads", "2", "-dff", "16", "-batch", "4", "-eval-n", "8", "-out", run)
			if code != 0 {
				t.Fatalf("%s %s: train: exit %d\n%s", tc.task, arch, code, stderr)
			}
			T := fmt.Sprint(tc.seqlen)
			met, code, stderr := evalJSON(t, "-ckpt", run, "-seqlen", T, "-n", "16")
			if code != 0 {
				t.Fatalf("%s %s: eval -seqlen %s: exit %d\n%s", tc.task, arch, T, code, stderr)
			}
			for _, k := range []string{"loss", "token_acc", "seq_acc"} {
				if v, ok := met[k]; !ok || math.IsNaN(v) || math.IsInf(v, 0) {
					t.Errorf("%s %s: eval -seqlen %s: %s = %v (present %v)", tc.task, arch, T, k, v, ok)
				}
			}
			// The examples evaluated are of the new length.
			ld, err := fromCheckpoint(run, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			s, run2, err := ld.atLength(tc.seqlen)
			if err != nil {
				t.Fatal(err)
			}
			d := s.(*transformerSession).data
			if d.Task.SeqLen() != tc.seqlen {
				t.Errorf("%s %s at -seqlen %s: task length %d", tc.task, arch, T, d.Task.SeqLen())
			}
			b, err := datasets.SampleBatch(d.Task, datasets.NewRand(1), 2, d.Config.Layout)
			if err != nil {
				t.Fatal(err)
			}
			if want := d.Config.Layout.RowLen(d.Task); b.T != want || b.T < tc.seqlen {
				t.Errorf("%s %s at -seqlen %s: rows of %d tokens, want %d", tc.task, arch, T, b.T, want)
			}
			if _, err := run2.Forward(transformer.TaskInputs(b)); err != nil {
				t.Errorf("%s %s at -seqlen %s: %v", tc.task, arch, T, err)
			}
		}
	}
	run := filepath.Join(t.TempDir(), "add")
	if code, _, stderr := runCLI(t, "train", "-task", "addition", "-positions", "sinusoidal", "-steps", "1", "-layers", "1", "-dmodel", "8", "-heads", "2", "-batch", "4", "-eval-n", "4", "-out", run); code != 0 {
		t.Fatal(stderr)
	}
	code, _, stderr := runCLI(t, "eval", "-ckpt", run, "-seqlen", "20")
	if code == 0 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "-seqlen 20: task addition is posed at lengths 3·digits+3 (6, 9, 12, ...): not at 20 (the nearest: 18 or 21)") {
		t.Errorf("addition at -seqlen 20: exit %d\n%s", code, stderr)
	}
}

// TestPositionsNone: a model trained with -positions none records it, samples, refuses
// a resume with other positions naming both, is refused by -format torch naming it, and
// exports to safetensors (rebuilt by train.LoadModel to the same logits) and ONNX.
func TestPositionsNone(t *testing.T) {
	dir := t.TempDir()
	text := seqlenText(t, dir)
	run := filepath.Join(dir, "run")
	trainCharLM(t, text, run, "-positions", "none", "-kernel", "exponential * distance(0.5)")
	if code, stdout, stderr := runCLI(t, "inspect", "-ckpt", run); code != 0 || !strings.Contains(stdout, `"positions": "none"`) || strings.Contains(stdout, "pos_emb") {
		t.Errorf("inspect: exit %d, want positions none and no pos_emb:\n%s%s", code, stdout, stderr)
	}
	if code, stdout, stderr := runCLI(t, "sample", "-ckpt", run, "-prompt", "the ", "-n", "40", "-temperature", "0"); code != 0 || len(stdout) != len("the ")+40+1 {
		t.Errorf("sample past the 16 positions: exit %d %q %s", code, stdout, stderr)
	}
	if code, _, stderr := runCLI(t, "train", "-resume", run, "-steps", "8", "-positions", "sinusoidal"); code != 2 || !strings.Contains(stderr, "-positions sinusoidal differs from the checkpoint's none") {
		t.Errorf("resume with other positions: exit %d\n%s", code, stderr)
	}
	out := filepath.Join(dir, "m.safetensors")
	if code, _, stderr := runCLI(t, "export", "-ckpt", run, "-out", out); code == 0 || !strings.Contains(stderr, "positions none (the reference has learned positions)") {
		t.Errorf("export -format torch: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "export", "-format", "safetensors", "-ckpt", run, "-out", out); code != 0 {
		t.Fatalf("export -format safetensors: exit %d\n%s", code, stderr)
	}
	lm, err := train.LoadModel(out, autodiff.Float32)
	if err != nil {
		t.Fatal(err)
	}
	m := lm.Model.(*transformer.Model)
	if m.Config.Positions.String() != "none" || m.PosEmb != nil {
		t.Errorf("rebuilt model: positions %s, table %v", m.Config.Positions, m.PosEmb)
	}
	ld, err := fromCheckpoint(run, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ids := tensor.New(tensor.WithShape(1, 12), tensor.WithBacking([]int{1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4}))
	want, err := ld.run.Forward(map[string]*tensor.Dense{transformer.InputIDs: ids})
	if err != nil {
		t.Fatal(err)
	}
	got, err := autodiff.NewModel(lm.Params, m.Builder(), 0).Forward(map[string]*tensor.Dense{transformer.InputIDs: ids})
	if err != nil {
		t.Fatal(err)
	}
	if g, w := got.Values[transformer.OutputLogits].Data().([]float32), want.Values[transformer.OutputLogits].Data().([]float32); fmt.Sprint(g) != fmt.Sprint(w) {
		t.Error("the safetensors model's logits differ from the checkpoint's")
	}
	if code, stdout, stderr := runCLI(t, "export", "-format", "onnx", "-ckpt", run, "-out", filepath.Join(dir, "m.onnx")); code != 0 || !strings.Contains(stdout, "ONNX opset 17") {
		t.Errorf("export -format onnx: exit %d\n%s%s", code, stdout, stderr)
	}
}

// checkLengthIndependent checks that the LM at run, evaluated as eval -seqlen builds it
// at 16 and at 64, gives the same per-token losses (float32, to 1e-5) on the first 16
// positions of a validation window, and on the last 16 as a row starting there, past
// the kernel's reach.
func checkLengthIndependent(t *testing.T, run string, reach int) {
	t.Helper()
	ld, err := fromCheckpoint(run, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	losses := func(T int, ids []int) []float64 {
		s, m, err := ld.atLength(T)
		if err != nil {
			t.Fatal(err)
		}
		res, err := m.Forward(map[string]*tensor.Dense{transformer.InputIDs: tensor.New(tensor.WithShape(1, len(ids)-1), tensor.WithBacking(append([]int(nil), ids[:len(ids)-1]...)))})
		if err != nil {
			t.Fatal(err)
		}
		logits := res.Values[transformer.OutputLogits].Data().([]float32)
		v := s.(*transformerSession).cfg.Vocab
		out := make([]float64, len(ids)-1)
		for i := range out {
			row := logits[i*v : (i+1)*v]
			var z float64
			for _, x := range row {
				z += math.Exp(float64(x))
			}
			out[i] = math.Log(z) - float64(row[ids[i+1]])
		}
		return out
	}
	val := datasets.Ints(ld.sess.(*transformerSession).data.Corpus.Val)
	long := losses(64, val[:65])
	for _, part := range []struct {
		start, from int // the row of 16 starting at start, compared from its position from on
	}{{0, 0}, {48, reach - 1}} {
		short := losses(16, val[part.start:part.start+17])
		for i := part.from; i < 16; i++ {
			if d := math.Abs(short[i] - long[part.start+i]); !(d <= 1e-5) {
				t.Errorf("token %d: loss %.7g in a row of 16 from %d, %.7g in the row of 64", part.start+i, short[i], part.start, long[part.start+i])
			}
		}
	}
}
