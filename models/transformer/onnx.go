package transformer

import (
	"encoding/json"

	"github.com/locusml/locus/layers"
	"github.com/locusml/locus/onnx"
)

// Names of the inputs and outputs of the ONNX graph of ExportONNX.
const (
	ONNXInputIDs     = "ids"    // int64 [batch, seq]: token ids (for encdec, the decoder's inputs)
	ONNXInputSource  = "src"    // int64 [batch, src_seq]: source ids (encdec only)
	ONNXOutputLogits = "logits" // float32 [batch, seq, vocab]
)

// ExportONNX returns the model as a self-contained ONNX graph (opset 17, the weights as
// initializers under their parameter names) computing Logits, or EncDecLogits for an
// encdec model: int64 ids [batch, seq] (and src [batch, src_seq]) to float32 logits
// [batch, seq, vocab], row [b, t] predicting position t of sequence b (for an LM, the
// token after ids[b, t]). Batch and sequence lengths are dynamic, up to MaxLen. Dropout
// is left out (inference).
func (m *Model) ExportONNX() (*onnx.Model, error) {
	cfg := m.Config
	g := onnx.NewGraph("locus_"+cfg.Arch.String(), "Locus Transformer, "+cfg.Arch.String()+", kernel "+cfg.Kernel.String())
	seqDoc := "int64 [batch, seq]: token ids, seq <= " + itoa(cfg.MaxLen)
	var logits string
	switch cfg.Arch {
	case ArchEncDec:
		src := g.Input(ONNXInputSource, "int64 [batch, src_seq]: source token ids, src_seq <= "+itoa(cfg.MaxLen), onnx.Int64, onnx.Sym("batch"), onnx.Sym("src_seq"))
		ids := g.Input(ONNXInputIDs, seqDoc+" (the decoder's inputs: the target shifted right)", onnx.Int64, onnx.Sym("batch"), onnx.Sym("seq"))
		mem := m.onnxEmbed(g, src)
		for _, b := range m.EncBlocks {
			mem = b.ONNX(g, mem, cfg.MaxLen)
		}
		mem = m.EncLNF.ONNX(g, mem)
		x := m.onnxEmbed(g, ids)
		for _, b := range m.DecBlocks {
			x = b.onnx(g, x, mem, cfg.MaxLen)
		}
		logits = m.onnxHead(g, x)
	default:
		ids := g.Input(ONNXInputIDs, seqDoc, onnx.Int64, onnx.Sym("batch"), onnx.Sym("seq"))
		x := m.onnxEmbed(g, ids)
		for _, b := range m.Blocks {
			x = b.ONNX(g, x, cfg.MaxLen)
		}
		logits = m.onnxHead(g, x)
	}
	what := "float32 [batch, seq, vocab]: logits; row [b, t] scores the token at position t"
	if cfg.Arch.Decodes() {
		what = "float32 [batch, seq, vocab]: next-token logits; row [b, t] scores the token after ids[b, t]"
	}
	g.Output(logits, ONNXOutputLogits, what, onnx.Float, onnx.Sym("batch"), onnx.Sym("seq"), onnx.Size(cfg.Vocab))
	if err := g.Err(); err != nil {
		return nil, err
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	return &onnx.Model{Graph: g, Doc: "Locus model family " + Family + ": " + string(raw),
		Metadata: map[string]string{"locus_family": Family, "locus_config": string(raw)}}, nil
}

func (m *Model) onnxEmbed(g *onnx.Graph, ids string) string {
	x := m.TokEmb.ONNX(g, ids)
	switch m.Config.Positions {
	case layers.PositionsLearned:
		x = m.PosEmb.ONNX(g, x)
	case layers.PositionsSinusoidal:
		x = layers.ONNXSinusoidal(g, x, m.Config.MaxLen, m.Config.Dim)
	}
	return x
}

func (m *Model) onnxHead(g *onnx.Graph, x string) string {
	x = m.LNF.ONNX(g, x)
	if m.Head != nil {
		return m.Head.ONNX(g, x)
	}
	return g.MatMul(x, g.Transpose(layers.ONNXParam(g, m.TokEmb.Weight), 1, 0))
}

// onnx writes the block's forward pass on x [B, T, Dim] over the encoder output mem.
func (b *DecoderBlock) onnx(g *onnx.Graph, x, mem string, maxLen int) string {
	y := layers.ONNXResidual(g, x, b.LN1, b.PostLN, func(h string) string { return b.Attn.ONNX(g, h, h, maxLen) })
	y = layers.ONNXResidual(g, y, b.LNX, b.PostLN, func(h string) string { return b.XAttn.ONNX(g, h, mem, maxLen) })
	return layers.ONNXResidual(g, y, b.LN2, b.PostLN, func(h string) string { return b.FFN.ONNX(g, h) })
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
