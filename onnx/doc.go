// Package onnx builds ONNX models (https://onnx.ai) from Go: a small graph builder over
// the ONNX operator set and an encoder for the few protobuf messages a model file needs
// (ModelProto, GraphProto, NodeProto, TensorProto, ValueInfoProto, AttributeProto).
//
// A Graph is built by calls that each add one node and return the name of its output,
// so that a layer's export reads like its forward pass:
//
//	g := onnx.NewGraph("lm")
//	ids := g.Input("ids", "token ids", onnx.Int64, onnx.Sym("batch"), onnx.Sym("seq"))
//	x := g.Op("Gather", g.Initializer("tok_emb.weight", w), ids)
//
// The first error (a bad argument, an unknown dtype) is kept, later calls return "", and
// Model reports it, as autodiff.Graph does. Weights are initializers, in float32, under
// the names of the Locus parameters they hold. Models target opset 17 of the default
// domain (IR version 8), the first opset with LayerNormalization, which onnxruntime
// 1.13 and later run.
//
// The protobuf encoding is written by hand with google.golang.org/protobuf's protowire
// (varints, tags and length prefixes): about a dozen message types are needed, all
// write-only, so generated code for the whole of onnx.proto, or a dependency on another
// module's copy of it, would be more code to trust than the encoder itself. The field
// numbers are those of onnx/onnx.in.proto; the models' tests load every exported file in
// onnxruntime and validate it with onnx's checker (internal/ortrun).
package onnx
