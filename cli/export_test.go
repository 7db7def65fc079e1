package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/internal/ortrun"
	"github.com/locusml/locus/layers"
	"github.com/locusml/locus/models/dae"
	"github.com/locusml/locus/models/transformer"
	"github.com/locusml/locus/train"
)

// saveModel writes a checkpoint of a freshly initialised model of the family.
func saveModel(t *testing.T, dir, family string, cfg any, newModel func(*autodiff.Params) error) {
	t.Helper()
	ps, _ := autodiff.NewParams(autodiff.Float32, 1)
	if err := newModel(ps); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ck := &train.Checkpoint{Step: 3, Family: family, ModelConfig: raw, Params: train.ParamTensors(ps)}
	if err := train.SaveCheckpoint(dir, ck); err != nil {
		t.Fatal(err)
	}
}

func saveTransformer(t *testing.T, dir string, mut func(*transformer.Config)) transformer.Config {
	t.Helper()
	cfg := transformer.DefaultConfig(transformer.ArchLM, 7, 8)
	cfg.Dim, cfg.Heads, cfg.Layers, cfg.Hidden = 8, 2, 1, 16
	if mut != nil {
		mut(&cfg)
	}
	saveModel(t, dir, transformer.Family, cfg, func(ps *autodiff.Params) error {
		_, err := transformer.New(cfg, ps)
		return err
	})
	return cfg
}

func saveDAE(t *testing.T, dir string) {
	t.Helper()
	cfg := dae.DefaultConfig()
	cfg.In, cfg.Hidden = 12, []int{6, 3, 6}
	saveModel(t, dir, dae.Family, cfg, func(ps *autodiff.Params) error {
		_, err := dae.New(cfg, ps)
		return err
	})
}

// TestExportTorchRefusesNonStandard: -format torch (the default) exits non-zero naming
// every setting that differs from the standard Transformer, and refuses DAEs.
func TestExportTorchRefusesNonStandard(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "gauss")
	saveTransformer(t, ck, func(c *transformer.Config) {
		c.Kernel, c.PostLN, c.Positions = layers.MustParseKernelSpec("gaussian"), true, layers.PositionsRotary
	})
	out := filepath.Join(dir, "m.safetensors")
	for _, args := range [][]string{{"export", "-ckpt", ck, "-out", out}, {"export", "-format", "torch", "-ckpt", ck, "-out", out}} {
		code, _, stderr := runCLI(t, args...)
		if code == 0 {
			t.Fatalf("%v: exit 0", args)
		}
		for _, want := range []string{"kernel gaussian", "post-LN", "positions rotary", "-format safetensors"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("%v: message does not name %q:\n%s", args, want, stderr)
			}
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("a refused export left %s", out)
		}
	}
	std := filepath.Join(dir, "std")
	saveTransformer(t, std, nil)
	if code, stdout, stderr := runCLI(t, "export", "-format", "torch", "-ckpt", std, "-out", out); code != 0 || !strings.Contains(stdout, "PyTorch") {
		t.Errorf("standard model: exit %d %q %s", code, stdout, stderr)
	}
	d := filepath.Join(dir, "dae")
	saveDAE(t, d)
	if code, _, stderr := runCLI(t, "export", "-ckpt", d, "-out", filepath.Join(dir, "d.safetensors")); code == 0 || !strings.Contains(stderr, "reference LM") || !strings.Contains(stderr, "dae") {
		t.Errorf("dae torch export: exit %d\n%s", code, stderr)
	}
}

// TestExportSafetensorsReloads: -format safetensors holds every tensor under Locus's
// names and the family and config in its metadata; train.LoadModel rebuilds the model.
func TestExportSafetensorsReloads(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck")
	cfg := saveTransformer(t, ck, func(c *transformer.Config) {
		c.Kernel, c.Bandwidth = layers.MustParseKernelSpec("mixture(gaussian, laplacian) * relbias(2)"), layers.BandwidthHead
	})
	out := filepath.Join(dir, "m.safetensors")
	if code, _, stderr := runCLI(t, "export", "-format", "safetensors", "-ckpt", ck, "-out", out); code != 0 {
		t.Fatalf("export: exit %d\n%s", code, stderr)
	}
	ld, err := train.LoadModel(out, autodiff.Float32)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := ld.Model.(*transformer.Model)
	if !ok || m.Config.Kernel.String() != cfg.Kernel.String() || m.Config.Bandwidth != cfg.Bandwidth || ld.Checkpoint.Step != 3 {
		t.Fatalf("reloaded %T %+v step %d", ld.Model, ld.Model, ld.Checkpoint.Step)
	}
	orig, err := train.LoadCheckpoint(ck)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range orig.Params {
		p := ld.Params.Get(name)
		if p == nil {
			t.Fatalf("reloaded model lacks %s", name)
		}
		for i, v := range want.Data().([]float32) {
			if float32(p.At(i)) != v {
				t.Fatalf("%s[%d] = %g, want %g", name, i, p.At(i), v)
			}
		}
	}
	d := filepath.Join(dir, "dae")
	saveDAE(t, d)
	if code, _, stderr := runCLI(t, "export", "-format", "safetensors", "-ckpt", d, "-out", out); code != 0 {
		t.Fatalf("dae export: exit %d\n%s", code, stderr)
	}
	if ld, err := train.LoadModel(out, autodiff.Float32); err != nil || ld.Family != dae.Family {
		t.Fatalf("dae reload: %v", err)
	}
}

// TestExportONNX writes ONNX files for a Transformer and a DAE (their numbers are
// checked against onnxruntime in the models' own tests).
func TestExportONNX(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck")
	saveTransformer(t, ck, func(c *transformer.Config) { c.Bandwidth = layers.BandwidthKNN })
	out := filepath.Join(dir, "m.onnx")
	code, stdout, stderr := runCLI(t, "export", "-format", "onnx", "-ckpt", ck, "-out", out)
	if code != 0 || !strings.Contains(stdout, "ids int64 [batch, seq]") || !strings.Contains(stdout, "logits float32 [batch, seq, 7]") {
		t.Fatalf("export: exit %d %q\n%s", code, stdout, stderr)
	}
	d := filepath.Join(dir, "dae")
	saveDAE(t, d)
	code, stdout, stderr = runCLI(t, "export", "-format", "onnx", "-ckpt", d, "-out", out)
	if code != 0 || !strings.Contains(stdout, "image float32 [batch, 12]") {
		t.Fatalf("dae export: exit %d %q\n%s", code, stdout, stderr)
	}
}

// TestExportBadInput: a corrupt or truncated checkpoint gives one line naming the file;
// an output in a missing or unwritable folder gives a clear error and no file.
func TestExportBadInput(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck")
	saveTransformer(t, ck, nil)
	for _, format := range []string{"torch", "safetensors", "onnx"} {
		out := filepath.Join(dir, "missing", "m.out")
		code, _, stderr := runCLI(t, "export", "-format", format, "-ckpt", ck, "-out", out)
		if code == 0 || !strings.Contains(stderr, "no such file or directory") || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%s to a missing folder: exit %d\n%s", format, code, stderr)
		}
		if os.Geteuid() != 0 { // root writes anywhere
			ro := filepath.Join(dir, "ro")
			os.Mkdir(ro, 0o555)
			if code, _, stderr := runCLI(t, "export", "-format", format, "-ckpt", ck, "-out", filepath.Join(ro, "m")); code == 0 || !strings.Contains(stderr, "permission denied") {
				t.Errorf("%s to a read-only folder: exit %d\n%s", format, code, stderr)
			}
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 2 {
		t.Errorf("partial files left: %v", entries)
	}
	file := filepath.Join(ck, train.ModelFile)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"torch", "safetensors", "onnx"} {
		code, _, stderr := runCLI(t, "export", "-format", format, "-ckpt", ck, "-out", filepath.Join(dir, "m.out"))
		if code == 0 || !strings.Contains(stderr, file) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%s of a truncated checkpoint: exit %d, want one line naming %s:\n%s", format, code, file, stderr)
		}
	}
}

// TestONNXGreedyMatchesSample: greedy generation from the exported ONNX LM, run in
// onnxruntime, equals `locus sample -temperature 0` on three 100-character prompts, for
// a standard LM and one with a kernel expression, rotary positions and kNN bandwidths.
// The prompts are longer than the context, so generation slides the window as sample
// does.
func TestONNXGreedyMatchesSample(t *testing.T) {
	ortrun.SkipIfMissing(t)
	dir := t.TempDir()
	text := "the quick brown fox jumps over the lazy dog. pack my box with five dozen liquor jugs! "
	data := filepath.Join(dir, "text.txt")
	if err := os.WriteFile(data, []byte(strings.Repeat(text, 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	prompts := []string{
		strings.Repeat("the lazy dog jumps. ", 5),
		strings.Repeat("pack my box with five jugs. ", 4)[:100],
		strings.Repeat(text, 2)[7:107],
	}
	const steps = 40
	for name, extra := range map[string][]string{
		"standard":                   nil,
		"gaussian-window-rotary-knn": {"-kernel", "gaussian * window(12)", "-bandwidth", "knn", "-positions", "rotary"},
	} {
		t.Run(name, func(t *testing.T) {
			run := filepath.Join(dir, name)
			args := append([]string{"train", "-task", "charlm", "-data", data, "-seqlen", "24", "-layers", "2", "-dmodel", "16", "-heads", "2",
				"-dff", "32", "-batch", "8", "-steps", "30", "-eval-every", "30", "-eval-n", "8", "-out", run}, extra...)
			if code, _, stderr := runCLI(t, args...); code != 0 {
				t.Fatalf("train: exit %d\n%s", code, stderr)
			}
			model := filepath.Join(dir, name+".onnx")
			if code, _, stderr := runCLI(t, "export", "-format", "onnx", "-ckpt", run, "-out", model); code != 0 {
				t.Fatalf("export: exit %d\n%s", code, stderr)
			}
			ortrun.CheckFiles(t, model)
			ld, err := fromCheckpoint(run, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			s := ld.sess.(*transformerSession)
			vocab := s.data.Corpus.Vocab
			var ids [][]int64
			for _, p := range prompts {
				enc, err := vocab.Encode([]byte(p))
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, toInt64s(enc))
			}
			gen, err := ortrun.Greedy(model, ids, steps, s.cfg.MaxLen)
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range prompts {
				code, stdout, stderr := runCLI(t, "sample", "-ckpt", run, "-prompt", p, "-n", fmt.Sprint(steps), "-temperature", "0")
				if code != 0 {
					t.Fatalf("sample: exit %d\n%s", code, stderr)
				}
				want := strings.TrimSuffix(strings.TrimPrefix(stdout, p), "\n")
				g := make([]int, len(gen[i]))
				for j, v := range gen[i] {
					g[j] = int(v)
				}
				got, err := vocab.Decode(g)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("prompt %d: %q", i, got)
				if string(got) != want {
					t.Errorf("prompt %d: onnxruntime greedy %q, locus sample %q", i, got, want)
				}
			}
		})
	}
}

func toInt64s(v []int) []int64 {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}
