package train

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/locusml/locus/optim"
	"gorgonia.org/tensor"
)

// failingWriter fails once more than limit bytes were written through it.
type failingWriter struct {
	w     io.Writer
	limit int
}

var errSimulated = errors.New("simulated write failure")

func (f *failingWriter) Write(p []byte) (int, error) {
	if len(p) > f.limit {
		n, _ := f.w.Write(p[:f.limit])
		f.limit = 0
		return n, errSimulated
	}
	f.limit -= len(p)
	return f.w.Write(p)
}

// failWrites makes writes of files whose name contains substr fail after limit bytes,
// until the test ends.
func failWrites(t *testing.T, substr string, limit int) {
	testHookWriter = func(path string, w io.Writer) io.Writer {
		if strings.Contains(filepath.Base(path), substr) {
			return &failingWriter{w: w, limit: limit}
		}
		return w
	}
	t.Cleanup(func() { testHookWriter = nil })
}

func stray(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestInterruptedCheckpointWriteKeepsPrevious(t *testing.T) {
	for _, file := range []string{ModelFile, OptimizerFile, MetaFile, LatestFile} {
		t.Run(file, func(t *testing.T) {
			dir := t.TempDir()
			l := newLoop(t, 30, dir)
			l.CheckpointEvery = 10
			l.Hooks = []Hook{{Every: 15, Func: func(context.Context, Progress) error {
				failWrites(t, file, 5)
				return nil
			}}}
			_, err := l.Run(context.Background())
			if !errors.Is(err, errSimulated) {
				t.Fatalf("Run: %v, want the simulated failure", err)
			}
			if file != LatestFile && !strings.Contains(err.Error(), filepath.Join(dir, "step-000020")) {
				t.Errorf("error %q does not name the checkpoint being written", err)
			}
			testHookWriter = nil
			if got := latest(t, dir); got != "step-000010" {
				t.Errorf("LATEST = %q, want step-000010", got)
			}
			ck, err := LoadCheckpoint(dir)
			if err != nil || ck.Step != 10 {
				t.Fatalf("LoadCheckpoint after a failed write: %v, %v", ck, err)
			}
			if _, err := os.Stat(filepath.Join(dir, "step-000020")); file != LatestFile && err == nil {
				t.Error("a failed write left step-000020 in place")
			}
			if s := stray(t, dir); len(s) > 0 {
				t.Errorf("temporary files left behind: %v", s)
			}
		})
	}
}

func TestCrashLeftoversAreIgnoredAndCleaned(t *testing.T) {
	dir := t.TempDir()
	l := newLoop(t, 10, dir)
	if _, err := l.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A crash while writing step 20: a partial temporary checkpoint and LATEST file.
	model, err := os.ReadFile(filepath.Join(dir, "step-000010", ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, tmpPrefix+"step-000020-123")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(tmp, ModelFile), model[:len(model)/2], 0o644)
	os.WriteFile(filepath.Join(dir, tmpPrefix+"LATEST-456"), []byte("step-0000"), 0o644)
	// A crash while replacing best: the old one moved aside, the new one not in place.
	if err := os.Rename(filepath.Join(dir, "step-000010"), filepath.Join(dir, oldPrefix+"best-789")); err != nil {
		t.Fatal(err)
	}
	if err := SaveCheckpoint(filepath.Join(dir, "step-000010"), mustLoad(t, filepath.Join(dir, oldPrefix+"best-789"))); err != nil {
		t.Fatal(err)
	}

	if ck, err := LoadCheckpoint(dir); err != nil || ck.Step != 10 {
		t.Fatalf("LoadCheckpoint(run dir) with leftovers: %v, %v", ck, err)
	}
	if ck, err := LoadCheckpoint(filepath.Join(dir, BestDir)); err != nil || ck.Step != 10 {
		t.Fatalf("LoadCheckpoint(best) during an interrupted replace: %v, %v", ck, err)
	}
	if _, err := LoadCheckpoint(tmp); err == nil {
		t.Error("a partial temporary checkpoint loaded")
	}

	r := newLoop(t, 20, "")
	if err := r.Resume(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := stray(t, dir); len(s) > 0 {
		t.Errorf("leftovers not cleaned: %v", s)
	}
	if _, err := os.Stat(filepath.Join(dir, BestDir, MetaFile)); err != nil {
		t.Errorf("the moved-aside best checkpoint was not put back: %v", err)
	}
	if latest(t, dir) != "step-000020" {
		t.Errorf("LATEST = %q", latest(t, dir))
	}
}

func mustLoad(t *testing.T, path string) *Checkpoint {
	t.Helper()
	ck, err := LoadCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	return ck
}

// savedRun trains briefly and returns the run directory and its checkpoint.
func savedRun(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	l := newLoop(t, 10, dir)
	if _, err := l.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return dir, filepath.Join(dir, "step-000010")
}

func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one mentioning %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q lacks %q", err, p)
		}
	}
}

func TestCorruptedCheckpointErrors(t *testing.T) {
	t.Run("truncated", func(t *testing.T) {
		_, ck := savedRun(t)
		file := filepath.Join(ck, ModelFile)
		fi, _ := os.Stat(file)
		os.Truncate(file, fi.Size()/2)
		_, err := LoadCheckpoint(ck)
		wantErr(t, err, file, "truncated")
	})
	t.Run("flipped byte", func(t *testing.T) {
		_, ck := savedRun(t)
		file := filepath.Join(ck, OptimizerFile)
		b, _ := os.ReadFile(file)
		b[len(b)-3] ^= 0x40
		os.WriteFile(file, b, 0o644)
		_, err := LoadCheckpoint(ck)
		wantErr(t, err, file, "corrupted", "SHA-256")
	})
	t.Run("garbage JSON", func(t *testing.T) {
		run, ck := savedRun(t)
		os.WriteFile(filepath.Join(ck, MetaFile), []byte(`{"step": 10, "versions": {`), 0o644)
		_, err := LoadCheckpoint(run)
		wantErr(t, err, filepath.Join(ck, MetaFile), "invalid JSON")
	})
	t.Run("missing file", func(t *testing.T) {
		_, ck := savedRun(t)
		os.Remove(filepath.Join(ck, OptimizerFile))
		_, err := LoadCheckpoint(ck)
		wantErr(t, err, filepath.Join(ck, OptimizerFile), "missing")
	})
	t.Run("newer format", func(t *testing.T) {
		_, ck := savedRun(t)
		file := filepath.Join(ck, MetaFile)
		b, _ := os.ReadFile(file)
		os.WriteFile(file, []byte(strings.Replace(string(b), `"format": 1`, `"format": 99`, 1)), 0o644)
		_, err := LoadCheckpoint(ck)
		wantErr(t, err, file, "format version 99")
	})
	t.Run("not a checkpoint", func(t *testing.T) {
		_, err := LoadCheckpoint(t.TempDir())
		wantErr(t, err, MetaFile, LatestFile)
	})
}

func TestCheckpointOfAnotherModel(t *testing.T) {
	_, dir := savedRun(t)
	ck := mustLoad(t, dir)
	file := filepath.Join(dir, ModelFile)

	t.Run("shape", func(t *testing.T) {
		m := newMLP(t, mlpConfig{Hidden: 8}, 1)
		before := paramBits(m.Params())
		err := ck.ApplyParams(m.Params())
		wantErr(t, err, fmt.Sprintf(`load checkpoint %s: tensor "fc1.weight": shape [1 16] does not match parameter shape [1 8]`, file),
			`tensor "fc2.weight": shape [16 1] does not match parameter shape [8 1]`)
		if !reflect.DeepEqual(before, paramBits(m.Params())) {
			t.Error("a failed ApplyParams changed the parameters")
		}
	})
	t.Run("missing tensor", func(t *testing.T) {
		m := newMLP(t, mlpConfig{Hidden: 16, Extra: true}, 1)
		wantErr(t, ck.ApplyParams(m.Params()), file, `tensor "fc3.weight" is missing (parameter shape [2 2])`)
	})
	t.Run("unexpected tensor", func(t *testing.T) {
		ck := mustLoad(t, dir)
		ck.Params["head.weight"] = tensor.New(tensor.WithShape(3, 4), tensor.Of(tensor.Float32))
		m := newMLP(t, mlpConfig{Hidden: 16}, 1)
		wantErr(t, ck.ApplyParams(m.Params()), file, `unexpected tensor "head.weight" (shape [3 4])`)
	})
	t.Run("resume", func(t *testing.T) {
		l := newLoop(t, 20, "")
		l.Model = newMLP(t, mlpConfig{Hidden: 8}, 1)
		l.Optimizer, _ = optim.NewAdam(optim.All(l.Model.Params().List()), optim.DefaultAdamConfig())
		wantErr(t, l.Resume(dir), file, `tensor "fc1.weight"`, "[1 16]", "[1 8]")
	})
	t.Run("optimizer", func(t *testing.T) {
		l := newLoop(t, 20, "")
		l.Optimizer, _ = optim.NewSGD(optim.All(l.Model.Params().List()), optim.SGDConfig{LR: 0.1, Momentum: 0.9})
		wantErr(t, l.Resume(dir), filepath.Join(dir, OptimizerFile), "exp_avg")
	})
}

func TestCheckpointRoundTrip(t *testing.T) {
	_, dir := savedRun(t)
	ck := mustLoad(t, dir)
	if ck.Step != 10 || ck.Versions.Format != FormatVersion || ck.Versions.Locus != LocusVersion || ck.Versions.Go == "" {
		t.Errorf("checkpoint header: step %d versions %+v", ck.Step, ck.Versions)
	}
	var mc, dc bytes.Buffer
	json.Compact(&mc, ck.ModelConfig)
	json.Compact(&dc, ck.DataConfig)
	if mc.String() != `{"hidden":16,"dropout":0.1}` || dc.String() != `{"curve":"sin","n":64}` {
		t.Errorf("configs %s and %s", ck.ModelConfig, ck.DataConfig)
	}
	if len(ck.RNG) == 0 || len(ck.DataState) == 0 || len(ck.History) == 0 {
		t.Error("RNG, data state or history missing")
	}
	if ck.Params["fc1.weight"].Dtype() != tensor.Float32 || ck.Optimizer[optim.StepKey] == nil {
		t.Error("weights not float32 or optimizer step missing")
	}
	// Saving what was loaded gives the same checkpoint.
	again := filepath.Join(t.TempDir(), "copy")
	if err := SaveCheckpoint(again, ck); err != nil {
		t.Fatal(err)
	}
	ck2 := mustLoad(t, again)
	ck2.Dir = ck.Dir
	if !reflect.DeepEqual(ck, ck2) {
		t.Error("a saved and reloaded checkpoint differs")
	}
	// Replacing an existing checkpoint directory works and leaves nothing behind.
	ck.Step = 11
	if err := SaveCheckpoint(again, ck); err != nil {
		t.Fatal(err)
	}
	if mustLoad(t, again).Step != 11 {
		t.Error("replacing a checkpoint did not take")
	}
	if s := stray(t, filepath.Dir(again)); len(s) > 0 {
		t.Errorf("leftovers: %v", s)
	}
}
