package onnx

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// fields decodes one level of a protobuf message: every field's number with its varint
// value or bytes.
func fields(t *testing.T, b []byte) map[protowire.Number][]any {
	t.Helper()
	out := map[protowire.Number][]any{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("bad tag: %v", protowire.ParseError(n))
		}
		b = b[n:]
		var v any
		switch typ {
		case protowire.VarintType:
			v, n = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		case protowire.Fixed32Type:
			v, n = protowire.ConsumeFixed32(b)
		default:
			t.Fatalf("field %d: unexpected wire type %d", num, typ)
		}
		if n < 0 {
			t.Fatalf("field %d: %v", num, protowire.ParseError(n))
		}
		out[num] = append(out[num], v)
		b = b[n:]
	}
	return out
}

func tiny() *Model {
	g := NewGraph("tiny", "y = relu(x + 1)")
	x := g.Input("x", "float32 [batch, 2]", Float, Sym("batch"), Size(2))
	g.Output(g.Unary("Relu", g.AddConst(x, 1)), "y", "float32 [batch, 2]", Float, Sym("batch"), Size(2))
	return &Model{Graph: g, Doc: "a test", Metadata: map[string]string{"k": "v"}}
}

// TestMarshalLayout checks the encoding against onnx.proto's field numbers: IR version,
// opset import, graph with nodes, initializer, inputs and outputs, metadata.
func TestMarshalLayout(t *testing.T) {
	b, err := tiny().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	m := fields(t, b)
	if v := m[modelIRVersion]; len(v) != 1 || v[0].(uint64) != irVersion {
		t.Errorf("ir_version %v, want %d", v, irVersion)
	}
	opset := fields(t, m[modelOpsetImport][0].([]byte))
	if v := opset[opsetVersion]; len(v) != 1 || v[0].(uint64) != defaultOpset {
		t.Errorf("opset %v, want %d", v, defaultOpset)
	}
	meta := fields(t, m[modelMetadataProps][0].([]byte))
	if string(meta[entryKey][0].([]byte)) != "k" || string(meta[entryValue][0].([]byte)) != "v" {
		t.Errorf("metadata %v", meta)
	}
	g := fields(t, m[modelGraph][0].([]byte))
	if n := len(g[graphNode]); n != 3 { // Add, Relu, Identity to the output name
		t.Errorf("%d nodes, want 3", n)
	}
	if n := len(g[graphInitializer]); n != 1 {
		t.Errorf("%d initializers, want 1", n)
	}
	in := fields(t, g[graphInput][0].([]byte))
	if string(in[valueName][0].([]byte)) != "x" || string(in[valueDocString][0].([]byte)) != "float32 [batch, 2]" {
		t.Errorf("input %v", in)
	}
	tt := fields(t, fields(t, in[valueType][0].([]byte))[typeTensor][0].([]byte))
	if tt[tensorElemType][0].(uint64) != uint64(Float) {
		t.Errorf("input type %v", tt)
	}
	dims := fields(t, tt[tensorShape][0].([]byte))[shapeDim]
	if len(dims) != 2 || string(fields(t, dims[0].([]byte))[dimParam][0].([]byte)) != "batch" || fields(t, dims[1].([]byte))[dimValue][0].(uint64) != 2 {
		t.Errorf("input dims %v", dims)
	}
	init := fields(t, g[graphInitializer][0].([]byte))
	if raw := init[tensorRawData][0].([]byte); len(raw) != 4 || init[tensorDataType][0].(uint64) != uint64(Float) {
		t.Errorf("initializer %v", init)
	}
}

// TestGraphErrors: the first error is kept, later calls return "", Marshal reports it.
func TestGraphErrors(t *testing.T) {
	g := NewGraph("bad", "")
	x := g.Input("x", "", Float, Size(1))
	if y := g.Add(x, "nope"); y != "" || g.Err() == nil || !strings.Contains(g.Err().Error(), `Add: undefined input "nope"`) {
		t.Fatalf("Add with an undefined input: %q, %v", y, g.Err())
	}
	first := g.Err()
	if y := g.Unary("Relu", x); y != "" || g.Err() != first {
		t.Errorf("a call after an error: %q, %v", y, g.Err())
	}
	if _, err := (&Model{Graph: g}).Marshal(); err != first {
		t.Errorf("Marshal: %v, want %v", err, first)
	}
	g = NewGraph("dup", "")
	g.Input("x", "", Float)
	g.Input("x", "", Float)
	if g.Err() == nil || !strings.Contains(g.Err().Error(), `"x" defined twice`) {
		t.Errorf("duplicate input: %v", g.Err())
	}
	g = NewGraph("size", "")
	g.Const([]int{2, 2}, 1, 2, 3)
	if g.Err() == nil || !strings.Contains(g.Err().Error(), "3 values for shape [2 2]") {
		t.Errorf("short constant: %v", g.Err())
	}
	if _, err := (&Model{Graph: NewGraph("empty", "")}).Marshal(); err == nil {
		t.Error("a graph without outputs marshals")
	}
}

// TestWriteFile: an unwritable destination is an error that leaves no file behind.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	if err := WriteFile(filepath.Join(dir, "missing", "m.onnx"), tiny()); err == nil || !strings.Contains(err.Error(), "no such file or directory") {
		t.Errorf("missing folder: %v", err)
	}
	path := filepath.Join(dir, "m.onnx")
	if err := WriteFile(path, tiny()); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "m.onnx" {
		t.Errorf("folder holds %v, want only m.onnx", entries)
	}
}

// A graph is built by calls that each add a node and return its output's name.
func ExampleGraph() {
	g := NewGraph("affine", "y = relu(x·Wᵀ + b)")
	x := g.Input("x", "float32 [batch, 3]", Float, Sym("batch"), Size(3))
	w := g.Initializer("linear.weight", []int{2, 3}, []float32{1, 0, 0, 0, 1, 0})
	b := g.Initializer("linear.bias", []int{2}, []float32{0.5, -0.5})
	y := g.Unary("Relu", g.Add(g.MatMul(x, g.Transpose(w, 1, 0)), b))
	g.Output(y, "y", "float32 [batch, 2]", Float, Sym("batch"), Size(2))
	m := &Model{Graph: g}
	if _, err := m.Marshal(); err != nil {
		fmt.Println(err)
	}
	for _, v := range append(m.Inputs(), m.Outputs()...) {
		fmt.Println(v.Name, v.Type, v.Dims)
	}
	// Output:
	// x float32 [batch 3]
	// y float32 [batch 2]
}
