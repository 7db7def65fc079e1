package onnx

import (
	"encoding/binary"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of onnx.proto (onnx/onnx.in.proto in the onnx repository).
const (
	modelIRVersion     = 1
	modelProducerName  = 2
	modelProducerVer   = 3
	modelDocString     = 6
	modelGraph         = 7
	modelOpsetImport   = 8
	modelMetadataProps = 14

	opsetDomain  = 1
	opsetVersion = 2

	entryKey   = 1
	entryValue = 2

	graphNode        = 1
	graphName        = 2
	graphInitializer = 5
	graphDocString   = 10
	graphInput       = 11
	graphOutput      = 12

	nodeInput     = 1
	nodeOutput    = 2
	nodeName      = 3
	nodeOpType    = 4
	nodeAttribute = 5

	attrName   = 1
	attrF      = 2
	attrI      = 3
	attrS      = 4
	attrT      = 5
	attrFloats = 7
	attrInts   = 8
	attrType   = 20

	tensorDims     = 1
	tensorDataType = 2
	tensorName     = 8
	tensorRawData  = 9

	valueName      = 1
	valueType      = 2
	valueDocString = 3

	typeTensor      = 1 // TypeProto.tensor_type
	tensorElemType  = 1 // TypeProto.Tensor.elem_type
	tensorShape     = 2 // TypeProto.Tensor.shape
	shapeDim        = 1 // TensorShapeProto.dim
	dimValue        = 1 // TensorShapeProto.Dimension.dim_value
	dimParam        = 2 // TensorShapeProto.Dimension.dim_param
	attrTypeFloat   = 1 // AttributeProto.AttributeType
	attrTypeInt     = 2
	attrTypeString  = 3
	attrTypeTensor  = 4
	attrTypeFloats  = 6
	attrTypeInts    = 7
	irVersion       = 8 // IR_VERSION_2021_7_30, the version of opset 17
	defaultOpset    = 17
	producerName    = "locus"
	producerVersion = "0.1"
)

// msg is a protobuf message being encoded.
type msg []byte

func (m *msg) varint(num protowire.Number, v uint64) {
	*m = protowire.AppendTag(*m, num, protowire.VarintType)
	*m = protowire.AppendVarint(*m, v)
}

func (m *msg) int64(num protowire.Number, v int64) { m.varint(num, uint64(v)) }

func (m *msg) bytes(num protowire.Number, b []byte) {
	*m = protowire.AppendTag(*m, num, protowire.BytesType)
	*m = protowire.AppendBytes(*m, b)
}

func (m *msg) string(num protowire.Number, s string) {
	*m = protowire.AppendTag(*m, num, protowire.BytesType)
	*m = protowire.AppendString(*m, s)
}

func (m *msg) float(num protowire.Number, f float32) {
	*m = protowire.AppendTag(*m, num, protowire.Fixed32Type)
	*m = protowire.AppendFixed32(*m, math.Float32bits(f))
}

// packedInts writes a packed repeated int64 field.
func (m *msg) packedInts(num protowire.Number, vs []int64) {
	var b []byte
	for _, v := range vs {
		b = protowire.AppendVarint(b, uint64(v))
	}
	m.bytes(num, b)
}

// packedFloats writes a packed repeated float field.
func (m *msg) packedFloats(num protowire.Number, vs []float32) {
	b := make([]byte, 0, 4*len(vs))
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	m.bytes(num, b)
}

func (t *Tensor) encode() msg {
	var m msg
	for _, d := range t.Dims {
		m.int64(tensorDims, d)
	}
	m.int64(tensorDataType, int64(t.Type))
	if t.Name != "" {
		m.string(tensorName, t.Name)
	}
	m.bytes(tensorRawData, t.raw())
	return m
}

func (a Attr) encode() msg {
	var m msg
	m.string(attrName, a.Name)
	switch a.kind {
	case attrTypeFloat:
		m.float(attrF, a.f)
	case attrTypeInt:
		m.int64(attrI, a.i)
	case attrTypeString:
		m.string(attrS, a.s)
	case attrTypeTensor:
		m.bytes(attrT, a.t.encode())
	case attrTypeFloats:
		m.packedFloats(attrFloats, a.floats)
	case attrTypeInts:
		m.packedInts(attrInts, a.ints)
	}
	m.int64(attrType, int64(a.kind))
	return m
}

func (n *node) encode() msg {
	var m msg
	for _, in := range n.inputs {
		m.string(nodeInput, in)
	}
	for _, out := range n.outputs {
		m.string(nodeOutput, out)
	}
	m.string(nodeName, n.name)
	m.string(nodeOpType, n.op)
	for _, a := range n.attrs {
		m.bytes(nodeAttribute, a.encode())
	}
	return m
}

func (v *ValueInfo) encode() msg {
	var shape msg
	for _, d := range v.Dims {
		var dm msg
		if d.Param != "" {
			dm.string(dimParam, d.Param)
		} else {
			dm.int64(dimValue, d.Value)
		}
		shape.bytes(shapeDim, dm)
	}
	var tt msg
	tt.int64(tensorElemType, int64(v.Type))
	tt.bytes(tensorShape, shape)
	var typ msg
	typ.bytes(typeTensor, tt)
	var m msg
	m.string(valueName, v.Name)
	m.bytes(valueType, typ)
	if v.Doc != "" {
		m.string(valueDocString, v.Doc)
	}
	return m
}

func (g *Graph) encode() msg {
	var m msg
	for _, n := range g.nodes {
		m.bytes(graphNode, n.encode())
	}
	m.string(graphName, g.name)
	for _, t := range g.inits {
		m.bytes(graphInitializer, t.encode())
	}
	if g.doc != "" {
		m.string(graphDocString, g.doc)
	}
	for i := range g.inputs {
		m.bytes(graphInput, g.inputs[i].encode())
	}
	for i := range g.outputs {
		m.bytes(graphOutput, g.outputs[i].encode())
	}
	return m
}
