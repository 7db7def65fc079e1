package train

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// The fuzz targets of the checkpoint readers. Their seed corpora in testdata/fuzz are
// files of a real run, written by TestWriteFuzzSeeds (LOCUS_FUZZ_SEEDS=1); .ci/run
// fuzzes each for a few seconds, and a crasher it finds is committed there.

// FuzzDecodeSafetensors: any bytes decode to tensors or an error, never a panic or an
// allocation beyond the input's size.
func FuzzDecodeSafetensors(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		ts, _, err := decodeSafetensors(b)
		if err != nil {
			return
		}
		var n int
		for _, x := range ts {
			n += x.Shape().TotalSize()
		}
		if n > len(b) {
			t.Fatalf("%d values decoded from %d bytes", n, len(b))
		}
	})
}

// FuzzLoadCheckpoint: a checkpoint of any checkpoint.json and tensor files (with their
// checksums filled in, so that the fuzzer reaches past them) loads, applies to the model
// and resumes training, or fails with an error.
func FuzzLoadCheckpoint(f *testing.F) {
	f.Fuzz(func(t *testing.T, meta, model, opt []byte) {
		dir := filepath.Join(t.TempDir(), "step-000001")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		files := map[string]fileInfo{}
		for name, b := range map[string][]byte{ModelFile: model, OptimizerFile: opt} {
			if len(b) == 0 {
				continue
			}
			sum := sha256.Sum256(b)
			files[name] = fileInfo{Size: int64(len(b)), SHA256: hex.EncodeToString(sum[:])}
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(meta, &m) == nil && m != nil {
			m["files"], _ = json.Marshal(files)
			meta, _ = json.Marshal(m)
		}
		if err := os.WriteFile(filepath.Join(dir, MetaFile), meta, 0o644); err != nil {
			t.Fatal(err)
		}
		ck, err := LoadCheckpoint(dir)
		if err != nil {
			return
		}
		l := newLoop(t, 0, "")
		if err := ck.ApplyParams(l.Model.Params()); err != nil {
			return
		}
		if err := l.Resume(dir); err != nil {
			return
		}
		if ck.Step > 1000 {
			return
		}
		l.Steps, l.Dir, l.Out = ck.Step+1, filepath.Dir(dir), nil
		l.Run(context.Background()) // errors are fine; panics are not
	})
}

// TestWriteFuzzSeeds writes the seed corpora of the fuzz targets above from a real run.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("LOCUS_FUZZ_SEEDS") == "" {
		t.Skip("set LOCUS_FUZZ_SEEDS=1 to rewrite testdata/fuzz")
	}
	dir := t.TempDir()
	l := newLoop(t, 3, dir)
	l.CheckpointEvery = 3
	if _, err := l.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(dir, stepDirName(3))
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(ck, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	meta, model, opt := read(MetaFile), read(ModelFile), read(OptimizerFile)
	writeSeed(t, "FuzzDecodeSafetensors", "model", model)
	writeSeed(t, "FuzzDecodeSafetensors", "optimizer", opt)
	writeSeed(t, "FuzzLoadCheckpoint", "run", meta, model, opt)
	writeSeed(t, "FuzzLoadCheckpoint", "weights-only", meta, model, nil)
}

// writeSeed writes one corpus entry of a fuzz target in the format of go test.
func writeSeed(t *testing.T, target, name string, args ...[]byte) {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("go test fuzz v1\n")
	for _, a := range args {
		fmt.Fprintf(&b, "[]byte(%s)\n", strconv.Quote(string(a)))
	}
	dir := filepath.Join("testdata", "fuzz", target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
