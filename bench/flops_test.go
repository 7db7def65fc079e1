package bench

import (
	"math"
	"strings"
	"testing"

	"github.com/locusml/locus/models/transformer"
)

// TestLMTrainFLOPs checks the charlm workload's FLOP count against one made here op by
// op for a tiny model: every matrix product of the forward pass, from the shapes of the
// weights the workload's model actually has (each 2-D parameter but the embedding
// tables multiplies the B·T rows of its input) and from the attention's per-head
// products (QKᵀ: [T, dh]·[dh, T], PV: [T, T]·[T, dh], per sequence and head), at 2 FLOPs
// per multiply–add, the train step being 3 forward passes (the backward computes the
// gradients of both factors of each product). It also checks the sizes
// (≈ 3.9e9, 4.2e10 and 2.9e11 FLOP per step).
func TestLMTrainFLOPs(t *testing.T) {
	const d, heads, layers, dff, T, B = 8, 2, 3, 16, 5, 2
	w, err := NewShaped("charlm", 0, 1, Shape{SeqLen: T, Batch: B, Dim: d, Heads: heads, Layers: layers, Hidden: dff})
	if err != nil {
		t.Fatal(err)
	}
	var fwd float64
	n2d := 0
	for _, p := range w.Params.List() {
		s := p.Shape()
		if len(s) != 2 || strings.Contains(p.Name(), "emb") {
			continue
		}
		n2d++
		fwd += 2 * float64(B*T) * float64(s[0]*s[1]) // [B·T, in]·[in, out]
	}
	if want := layers*6 + 1; n2d != want { // q, k, v, o, fc1, fc2 per block; the head
		t.Fatalf("%d weight matrices, want %d", n2d, want)
	}
	dh := d / heads
	fwd += float64(layers * B * heads * (2*T*dh*T + 2*T*T*dh))
	if got, want := w.FLOPs, 3*fwd; got != want {
		t.Errorf("FLOPs per step %g, counted op by op %g", got, want)
	}
	for _, c := range []struct {
		d, heads, layers, dff, T, B int
		want                        float64
	}{
		{128, 4, 4, 512, 64, 12, 3.9e9},
		{256, 8, 4, 1024, 128, 16, 4.2e10},
		{384, 6, 6, 1536, 256, 16, 2.9e11},
	} {
		cfg := transformer.DefaultConfig(transformer.ArchLM, 65, c.T)
		cfg.Dim, cfg.Heads, cfg.Layers, cfg.Hidden = c.d, c.heads, c.layers, c.dff
		if got := LMTrainFLOPs(cfg, c.B, c.T); math.Abs(got/c.want-1) > 0.02 {
			t.Errorf("d %d, %d layers, T %d, batch %d: %.3g FLOP per step, the issue counts %.2g", c.d, c.layers, c.T, c.B, got, c.want)
		}
	}
}
