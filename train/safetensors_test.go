package train

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gorgonia.org/tensor"
)

func TestSafetensorsRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.safetensors")
	in := map[string]*tensor.Dense{
		"f32":    tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float32{1, -2, 3.5, float32(math.Inf(1)), 0, 1e-30})),
		"f64":    tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{math.Pi, math.Copysign(0, -1), 1e300})),
		"i64":    tensor.New(tensor.WithShape(2, 1), tensor.WithBacking([]int64{-7, 1 << 40})),
		"int":    tensor.New(tensor.WithShape(2), tensor.WithBacking([]int{3, -4})),
		"scalar": tensor.New(tensor.FromScalar(float32(2.5))),
	}
	meta := map[string]string{"format": "pt", "note": "hi"}
	if err := ExportSafetensors(path, in, meta); err != nil {
		t.Fatal(err)
	}
	out, gotMeta, err := ReadSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotMeta, meta) {
		t.Errorf("metadata %v, want %v", gotMeta, meta)
	}
	want := map[string]any{
		"f32":    []float32{1, -2, 3.5, float32(math.Inf(1)), 0, 1e-30},
		"f64":    []float64{math.Pi, math.Copysign(0, -1), 1e300},
		"i64":    []int64{-7, 1 << 40},
		"int":    []int64{3, -4}, // Int is stored as I64
		"scalar": float32(2.5),
	}
	for name, w := range want {
		got := out[name]
		if got == nil {
			t.Errorf("tensor %q missing", name)
			continue
		}
		if !got.Shape().Eq(in[name].Shape()) {
			t.Errorf("tensor %q: shape %v, want %v", name, got.Shape(), in[name].Shape())
		}
		if !reflect.DeepEqual(got.Data(), w) {
			t.Errorf("tensor %q: %v, want %v", name, got.Data(), w)
		}
	}
	if len(out) != len(want) {
		t.Errorf("read %d tensors, want %d", len(out), len(want))
	}
}

func TestSafetensorsReadsForeignFile(t *testing.T) {
	// A file as the reference implementation writes it (from the nlpodyssey example),
	// with the data as F32 instead of I32.
	header := `{"test":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"__metadata__":{"foo":"bar"}}`
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	b = append(b, header...)
	for _, v := range []float32{1, 2, 3, 4} {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	path := filepath.Join(t.TempDir(), "foreign.safetensors")
	os.WriteFile(path, b, 0o644)
	ts, meta, err := ReadSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	if meta["foo"] != "bar" || !reflect.DeepEqual(ts["test"].Data(), []float32{1, 2, 3, 4}) || !ts["test"].Shape().Eq(tensor.Shape{2, 2}) {
		t.Errorf("read %v %v", ts, meta)
	}

	// Errors name the file and say what is wrong.
	os.WriteFile(path, b[:len(b)-5], 0o644)
	_, _, err = ReadSafetensors(path)
	wantErr(t, err, path, "truncated")
	os.WriteFile(path, b[:4], 0o644)
	_, _, err = ReadSafetensors(path)
	wantErr(t, err, path, "truncated")
	bad := append([]byte(nil), b...)
	copy(bad[8:], "[garbage")
	os.WriteFile(path, bad, 0o644)
	_, _, err = ReadSafetensors(path)
	wantErr(t, err, path, "corrupted")
	i32 := []byte(strings.Replace(string(b), `"F32"`, `"I32"`, 1))
	os.WriteFile(path, i32, 0o644)
	_, _, err = ReadSafetensors(path)
	wantErr(t, err, path, `tensor "test"`, "unsupported dtype I32")
}

func TestExportIsAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "w.safetensors")
	old := map[string]*tensor.Dense{"a": tensor.New(tensor.WithShape(2), tensor.WithBacking([]float32{1, 2}))}
	if err := ExportSafetensors(path, old, nil); err != nil {
		t.Fatal(err)
	}
	failWrites(t, "w.safetensors", 20)
	big := map[string]*tensor.Dense{"a": tensor.New(tensor.WithShape(100), tensor.Of(tensor.Float32))}
	if err := ExportSafetensors(path, big, nil); err == nil {
		t.Fatal("export succeeded despite the failing writer")
	}
	testHookWriter = nil
	ts, _, err := ReadSafetensors(path)
	if err != nil || !reflect.DeepEqual(ts["a"].Data(), []float32{1, 2}) {
		t.Errorf("after a failed export: %v, %v; want the previous file", ts, err)
	}
	if s := stray(t, dir); len(s) > 0 {
		t.Errorf("leftovers: %v", s)
	}
}

func TestExportMaterializesViews(t *testing.T) {
	full := tensor.New(tensor.WithShape(3, 2), tensor.WithBacking([]float64{1, 2, 3, 4, 5, 6}))
	v, err := full.Slice(tensor.S(1, 3))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "v.safetensors")
	if err := ExportSafetensors(path, map[string]*tensor.Dense{"v": v.(*tensor.Dense)}, nil); err != nil {
		t.Fatal(err)
	}
	ts, _, err := ReadSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ts["v"].Data(), []float64{3, 4, 5, 6}) || !ts["v"].Shape().Eq(tensor.Shape{2, 2}) {
		t.Errorf("view exported as %v %v", ts["v"].Shape(), ts["v"].Data())
	}
}
