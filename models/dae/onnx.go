package dae

import (
	"encoding/json"
	"fmt"

	"github.com/locusml/locus/layers"
	"github.com/locusml/locus/onnx"
)

// Names of the input and output of the ONNX graph of ExportONNX.
const (
	ONNXInputImage           = "image"          // float32 [batch, In]: noisy images, pixels in [0, 1]
	ONNXOutputReconstruction = "reconstruction" // float32 [batch, In]: denoised images in (0, 1)
)

// ExportONNX returns the denoiser as a self-contained ONNX graph (opset 17, the weights
// as initializers under their parameter names): float32 images [batch, In] to their
// reconstructions [batch, In], the output "recon" of Builder. The batch is dynamic; as in
// Locus, the images of a batch never see each other.
func (m *Model) ExportONNX() (*onnx.Model, error) {
	c := m.cfg
	g := onnx.NewGraph("locus_"+c.Kind, "Locus denoising autoencoder: "+c.String())
	x := g.Input(ONNXInputImage, fmt.Sprintf("float32 [batch, %d]: noisy images, row-major pixels in [0, 1]", c.In), onnx.Float, onnx.Sym("batch"), onnx.Size(c.In))
	var y string
	if c.Kind == KindMLP {
		for i, l := range m.layers {
			x = l.ONNX(g, x)
			if i+1 < len(m.layers) {
				x = g.Unary("Relu", x)
			}
		}
		y = g.Unary("Sigmoid", x)
	} else {
		h := g.Unsqueeze(g.Unary("Relu", m.enc.ONNX(g, x)), 0) // [1, B, W]: the images are one attention call's queries
		for _, lv := range m.levels {
			mem := g.Unsqueeze(layers.ONNXParam(g, lv.memory), 0)
			a := lv.attn.ONNX(g, h, mem, 0)
			h = g.Unary("Relu", lv.pointwise.ONNX(g, g.Add(h, a)))
		}
		y = g.Unary("Sigmoid", m.dec.ONNX(g, g.Squeeze(h, 0)))
	}
	g.Output(y, ONNXOutputReconstruction, fmt.Sprintf("float32 [batch, %d]: the denoised images, in (0, 1)", c.In), onnx.Float, onnx.Sym("batch"), onnx.Size(c.In))
	if err := g.Err(); err != nil {
		return nil, err
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	return &onnx.Model{Graph: g, Doc: "Locus model family " + Family + ": " + string(raw),
		Metadata: map[string]string{"locus_family": Family, "locus_config": string(raw)}}, nil
}
