package onnx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"

	"github.com/locusml/locus/internal/regularfile"
)

// DataType is an ONNX tensor element type (TensorProto.DataType).
type DataType int32

// The element types Locus's models use.
const (
	Float DataType = 1
	Int64 DataType = 7
	Bool  DataType = 9
)

func (t DataType) String() string {
	switch t {
	case Float:
		return "float32"
	case Int64:
		return "int64"
	case Bool:
		return "bool"
	}
	return fmt.Sprintf("DataType(%d)", int32(t))
}

// Dim is one dimension of a graph input or output: a fixed size, or a named
// (dynamic) one such as "batch".
type Dim struct {
	Value int64
	Param string
}

// Sym returns the dynamic dimension called name.
func Sym(name string) Dim { return Dim{Param: name} }

// Size returns the fixed dimension n.
func Size(n int) Dim { return Dim{Value: int64(n)} }

func (d Dim) String() string {
	if d.Param != "" {
		return d.Param
	}
	return fmt.Sprint(d.Value)
}

// ValueInfo names and documents a graph input or output.
type ValueInfo struct {
	Name string
	Doc  string
	Type DataType
	Dims []Dim
}

// Tensor is a constant: an initializer or a tensor attribute. Float tensors hold Floats,
// Int64 tensors Ints, Bool tensors Bools; row-major.
type Tensor struct {
	Name   string
	Type   DataType
	Dims   []int64
	Floats []float32
	Ints   []int64
	Bools  []bool
}

// raw returns the tensor's raw_data: little-endian values, row-major.
func (t *Tensor) raw() []byte {
	var b []byte
	switch t.Type {
	case Float:
		b = make([]byte, 0, 4*len(t.Floats))
		for _, v := range t.Floats {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
	case Int64:
		b = make([]byte, 0, 8*len(t.Ints))
		for _, v := range t.Ints {
			b = binary.LittleEndian.AppendUint64(b, uint64(v))
		}
	case Bool:
		b = make([]byte, len(t.Bools))
		for i, v := range t.Bools {
			if v {
				b[i] = 1
			}
		}
	}
	return b
}

func (t *Tensor) size() int {
	switch t.Type {
	case Float:
		return len(t.Floats)
	case Int64:
		return len(t.Ints)
	case Bool:
		return len(t.Bools)
	}
	return -1
}

// Attr is a node attribute; make one with AttrInt, AttrInts, AttrFloat, AttrString or
// AttrTensor.
type Attr struct {
	Name   string
	kind   int
	f      float32
	i      int64
	s      string
	t      *Tensor
	floats []float32
	ints   []int64
}

// AttrInt is an integer attribute.
func AttrInt(name string, v int64) Attr { return Attr{Name: name, kind: attrTypeInt, i: v} }

// AttrInts is an integer-list attribute.
func AttrInts(name string, vs ...int64) Attr {
	return Attr{Name: name, kind: attrTypeInts, ints: vs}
}

// AttrFloat is a float attribute.
func AttrFloat(name string, v float32) Attr { return Attr{Name: name, kind: attrTypeFloat, f: v} }

// AttrString is a string attribute.
func AttrString(name, v string) Attr { return Attr{Name: name, kind: attrTypeString, s: v} }

// AttrTensor is a tensor attribute (e.g. the value of ConstantOfShape).
func AttrTensor(name string, t *Tensor) Attr { return Attr{Name: name, kind: attrTypeTensor, t: t} }

type node struct {
	name, op        string
	inputs, outputs []string
	attrs           []Attr
}

// Graph is an ONNX graph under construction. It is not safe for concurrent use.
type Graph struct {
	name, doc       string
	nodes           []*node
	inits           []*Tensor
	inputs, outputs []ValueInfo
	names           map[string]bool // values defined so far
	counter         int
	err             error
}

// NewGraph returns an empty graph; doc describes it in the model file.
func NewGraph(name, doc string) *Graph {
	return &Graph{name: name, doc: doc, names: map[string]bool{}}
}

// Err returns the first error of a call on g.
func (g *Graph) Err() error { return g.err }

// Fail records err (the first one wins) and returns "".
func (g *Graph) Fail(err error) string {
	if g.err == nil {
		g.err = err
	}
	return ""
}

// Failf records an error from a format and returns "".
func (g *Graph) Failf(format string, args ...any) string {
	return g.Fail(fmt.Errorf(format, args...))
}

// Has reports whether a value of that name is defined (an input, initializer or node
// output).
func (g *Graph) Has(name string) bool { return g.names[name] }

func (g *Graph) define(name string) bool {
	if name == "" {
		g.Failf("onnx: empty value name")
		return false
	}
	if g.names[name] {
		g.Failf("onnx: value %q defined twice", name)
		return false
	}
	g.names[name] = true
	return true
}

// Input declares a graph input and returns its name.
func (g *Graph) Input(name, doc string, t DataType, dims ...Dim) string {
	if g.err != nil || !g.define(name) {
		return ""
	}
	g.inputs = append(g.inputs, ValueInfo{Name: name, Doc: doc, Type: t, Dims: dims})
	return name
}

// Output declares value as the graph output called name (through an Identity node when
// the names differ).
func (g *Graph) Output(value, name, doc string, t DataType, dims ...Dim) {
	if g.err != nil {
		return
	}
	if value != name {
		g.nodes = append(g.nodes, &node{name: name, op: "Identity", inputs: []string{value}, outputs: []string{name}})
		if !g.define(name) {
			return
		}
	}
	g.outputs = append(g.outputs, ValueInfo{Name: name, Doc: doc, Type: t, Dims: dims})
}

// Initializer adds a named float32 weight of the given shape and returns its name. A
// second call with the same name returns the name again (a weight used twice, such as a
// tied embedding, is stored once).
func (g *Graph) Initializer(name string, dims []int, data []float32) string {
	if g.err != nil {
		return ""
	}
	for _, t := range g.inits {
		if t.Name == name {
			return name
		}
	}
	return g.addTensor(&Tensor{Name: name, Type: Float, Dims: int64s(dims), Floats: data})
}

// addTensor adds t as an initializer after checking its size.
func (g *Graph) addTensor(t *Tensor) string {
	n := int64(1)
	for _, d := range t.Dims {
		n *= d
	}
	if int64(t.size()) != n {
		return g.Failf("onnx: tensor %q has %d values for shape %v", t.Name, t.size(), t.Dims)
	}
	if !g.define(t.Name) {
		return ""
	}
	g.inits = append(g.inits, t)
	return t.Name
}

func (g *Graph) fresh(prefix string) string {
	for {
		g.counter++
		name := fmt.Sprintf("%s_%d", prefix, g.counter)
		if !g.names[name] {
			return name
		}
	}
}

// Const adds an unnamed float32 constant of the given shape (nil: a scalar).
func (g *Graph) Const(dims []int, data ...float32) string {
	if g.err != nil {
		return ""
	}
	return g.addTensor(&Tensor{Name: g.fresh("const"), Type: Float, Dims: int64s(dims), Floats: data})
}

// Scalar adds a float32 scalar constant.
func (g *Graph) Scalar(v float32) string { return g.Const(nil, v) }

// Ints adds a 1-D int64 constant (shapes, axes, indices).
func (g *Graph) Ints(vs ...int64) string {
	if g.err != nil {
		return ""
	}
	return g.addTensor(&Tensor{Name: g.fresh("ints"), Type: Int64, Dims: []int64{int64(len(vs))}, Ints: vs})
}

// IntScalar adds an int64 scalar constant.
func (g *Graph) IntScalar(v int64) string {
	if g.err != nil {
		return ""
	}
	return g.addTensor(&Tensor{Name: g.fresh("int"), Type: Int64, Ints: []int64{v}})
}

// Op adds a node with one output and returns the output's name. An input "" is an
// omitted optional input, except that after an earlier error every call returns "".
func (g *Graph) Op(op string, inputs []string, attrs ...Attr) string {
	out := g.OpN(op, inputs, 1, attrs...)
	if out == nil {
		return ""
	}
	return out[0]
}

// OpN adds a node with n outputs and returns their names.
func (g *Graph) OpN(op string, inputs []string, n int, attrs ...Attr) []string {
	if g.err != nil {
		return nil
	}
	for _, in := range inputs {
		if in != "" && !g.names[in] {
			g.Failf("onnx: %s: undefined input %q", op, in)
			return nil
		}
	}
	nd := &node{name: g.fresh(op), op: op, inputs: slices.Clone(inputs), attrs: attrs}
	for i := range n {
		out := fmt.Sprintf("%s:%d", nd.name, i)
		g.define(out)
		nd.outputs = append(nd.outputs, out)
	}
	g.nodes = append(g.nodes, nd)
	return nd.outputs
}

// The common ops, each one node.

// Add returns a + b (broadcasting).
func (g *Graph) Add(a, b string) string { return g.Op("Add", []string{a, b}) }

// Sub returns a − b.
func (g *Graph) Sub(a, b string) string { return g.Op("Sub", []string{a, b}) }

// Mul returns a·b.
func (g *Graph) Mul(a, b string) string { return g.Op("Mul", []string{a, b}) }

// Div returns a / b.
func (g *Graph) Div(a, b string) string { return g.Op("Div", []string{a, b}) }

// MatMul returns the (batched) matrix product a·b.
func (g *Graph) MatMul(a, b string) string { return g.Op("MatMul", []string{a, b}) }

// Unary applies a one-input op such as "Neg", "Exp", "Log", "Sqrt", "Relu".
func (g *Graph) Unary(op, x string) string { return g.Op(op, []string{x}) }

// Transpose permutes the axes of x.
func (g *Graph) Transpose(x string, perm ...int64) string {
	return g.Op("Transpose", []string{x}, AttrInts("perm", perm...))
}

// Reshape reshapes x; 0 keeps the input's dimension, −1 is inferred.
func (g *Graph) Reshape(x string, shape ...int64) string {
	return g.Op("Reshape", []string{x, g.Ints(shape...)})
}

// Unsqueeze inserts axes of size 1.
func (g *Graph) Unsqueeze(x string, axes ...int64) string {
	return g.Op("Unsqueeze", []string{x, g.Ints(axes...)})
}

// Squeeze removes axes of size 1.
func (g *Graph) Squeeze(x string, axes ...int64) string {
	return g.Op("Squeeze", []string{x, g.Ints(axes...)})
}

// ReduceSum sums over axes, keeping them when keep.
func (g *Graph) ReduceSum(x string, keep bool, axes ...int64) string {
	return g.Op("ReduceSum", []string{x, g.Ints(axes...)}, AttrInt("keepdims", b2i(keep)))
}

// ReduceMax takes the maximum over axes (opset 17: axes is an attribute).
func (g *Graph) ReduceMax(x string, keep bool, axes ...int64) string {
	return g.Op("ReduceMax", []string{x}, AttrInts("axes", axes...), AttrInt("keepdims", b2i(keep)))
}

// Scale returns x·c.
func (g *Graph) Scale(x string, c float64) string { return g.Mul(x, g.Scalar(float32(c))) }

// AddConst returns x + c.
func (g *Graph) AddConst(x string, c float64) string { return g.Add(x, g.Scalar(float32(c))) }

// Where returns cond ? a : b.
func (g *Graph) Where(cond, a, b string) string { return g.Op("Where", []string{cond, a, b}) }

// Cast converts x to the element type t.
func (g *Graph) Cast(x string, t DataType) string {
	return g.Op("Cast", []string{x}, AttrInt("to", int64(t)))
}

// Dim returns dimension axis of x as an int64 tensor of shape [1].
func (g *Graph) Dim(x string, axis int64) string {
	return g.Op("Shape", []string{x}, AttrInt("start", axis), AttrInt("end", axis+1))
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func int64s(v []int) []int64 {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}

// Model is an ONNX model: a graph, a description and string metadata.
type Model struct {
	Graph    *Graph
	Doc      string
	Metadata map[string]string
}

// Marshal returns the model's protobuf encoding (a .onnx file's bytes).
func (m *Model) Marshal() ([]byte, error) {
	if m.Graph == nil {
		return nil, errors.New("onnx: model without a graph")
	}
	if err := m.Graph.Err(); err != nil {
		return nil, err
	}
	if len(m.Graph.outputs) == 0 {
		return nil, errors.New("onnx: graph without outputs")
	}
	var out msg
	out.int64(modelIRVersion, irVersion)
	out.string(modelProducerName, producerName)
	out.string(modelProducerVer, producerVersion)
	if m.Doc != "" {
		out.string(modelDocString, m.Doc)
	}
	out.bytes(modelGraph, m.Graph.encode())
	var opset msg
	opset.string(opsetDomain, "")
	opset.int64(opsetVersion, defaultOpset)
	out.bytes(modelOpsetImport, opset)
	keys := make([]string, 0, len(m.Metadata))
	for k := range m.Metadata {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var e msg
		e.string(entryKey, k)
		e.string(entryValue, m.Metadata[k])
		out.bytes(modelMetadataProps, e)
	}
	return out, nil
}

// Inputs returns the graph's inputs.
func (m *Model) Inputs() []ValueInfo { return slices.Clone(m.Graph.inputs) }

// Outputs returns the graph's outputs.
func (m *Model) Outputs() []ValueInfo { return slices.Clone(m.Graph.outputs) }

// Exporter is a model that can describe itself as an ONNX graph.
type Exporter interface {
	ExportONNX() (*Model, error)
}

// WriteFile writes m to path atomically: to a temporary file in the same folder, synced,
// then renamed, so that path never holds a partial model. A path that holds something
// other than a regular file (a symlink, a device, a FIFO, a directory) is refused and
// left as it was.
func WriteFile(path string, m *Model) error {
	b, err := m.Marshal()
	if err != nil {
		return fmt.Errorf("write onnx %s: %w", path, err)
	}
	if err := regularfile.WriteFile(path, func(w io.Writer) error { _, err := w.Write(b); return err }); err != nil {
		return fmt.Errorf("onnx: %w", err)
	}
	return nil
}
