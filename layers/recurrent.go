package layers

import (
	"slices"

	"github.com/locusml/locus/autodiff"
)

// Recurrent decoding of causal random-feature attention. The local mean at query t is
// φ(q_t)ᵀ S_t / φ(q_t)ᵀ z_t with S_t = Σ_{s≤t} φ(k_s) v_sᵀ and z_t = Σ_{s≤t} φ(k_s), so a
// decoder needs only (S, z) of the tokens so far, [m, DHead+1] per sequence and head
// (z as the last column), not their keys and values: the state is the same size after
// ten tokens or ten thousand. It is what CausalLinearAttention's prefix sums hold at each
// step of the training-time forward pass.

// Recurrent reports whether the layer can decode with a constant-size state
// (AttendRecurrent): causal attention on random features.
func (a *KernelAttention) Recurrent() bool { return a.cfg.RandomFeatures > 0 && a.cfg.Causal }

// StateShape is the shape of AttendRecurrent's state for batch b: [b·Heads, m, DHead+1].
func (a *KernelAttention) StateShape(b int) []int {
	return []int{b * a.Heads, a.cfg.RandomFeatures, a.DHead + 1}
}

// AttendRecurrent is causal self-attention over x [B, Tn, Dim], new tokens that follow
// the tokens summarised by state (StateShape, nil before the first token), returning the
// output [B, Tn, Dim] and the state after the new tokens. The new tokens attend causally
// among themselves (prefix sums) and to every earlier token through the state, the same
// local means as Forward over the whole sequence. With rotary positions, rot holds the
// factors of the new tokens' positions for the split heads [B·Heads, Tn, DHead]; it is
// nil otherwise.
func (a *KernelAttention) AttendRecurrent(g *autodiff.Graph, x, state *autodiff.Node, rot *RotaryAngles) (y, next *autodiff.Node) {
	if !ready(g, "kernel attention", a.scope, x) {
		return nil, nil
	}
	if !a.Recurrent() {
		return fail(g, "kernel attention", a.scope, "recurrent decoding needs causal random-feature attention"), nil
	}
	xs := x.Shape()
	if len(xs) != 3 || xs[2] != a.cfg.Dim {
		return fail(g, "kernel attention", a.scope, "input %v, want [B, Tn, %d]", xs, a.cfg.Dim), nil
	}
	b, tn := xs[0], xs[1]
	if state != nil && !slices.Equal(state.Shape(), a.StateShape(b)) {
		return fail(g, "kernel attention", a.scope, "state %v, want %v", state.Shape(), a.StateShape(b)), nil
	}
	if a.cfg.Rotary && rot == nil {
		return fail(g, "kernel attention", a.scope, "rotary positions need the new tokens' rotary factors"), nil
	}
	q := a.splitHeads(g, a.Q.Forward(g, x))
	k := a.splitHeads(g, a.K.Forward(g, x))
	v := a.splitHeads(g, a.V.Forward(g, x))
	if a.cfg.Rotary {
		q, k = rotate(g, q, rot.Cos, rot.Sin), rotate(g, k, rot.Cos, rot.Sin)
	}
	mask := autodiff.Mask{Causal: true}
	h := a.bw.width(g, x, q, k, nil, mask, b, tn, false)
	phiQ, phiK := a.featureMaps(g, q, k, h, h)
	if g.Err() != nil {
		return nil, nil
	}
	v1 := withOnes(g, v)
	out := g.CausalLinearAttention(phiQ, phiK, v1, 0) // the new tokens among themselves
	next = g.BatchedMatMul(phiK, v1, true, false)     // their Σ φ(k)[v, 1]ᵀ
	if state != nil {
		out = g.Add(out, g.BatchedMatMul(phiQ, state, false, false))
		next = g.Add(state, next)
	}
	m := featureMean(g, out) // [B·H, Tn, dh]
	merged := g.Reshape(g.Transpose(g.Reshape(m, []int{b, a.Heads, tn, a.DHead}), 0, 2, 1, 3), []int{b, tn, a.cfg.Dim})
	return a.O.Forward(g, merged), next
}

// StepRecurrent is Step for a block whose attention is Recurrent: x [B, Tn, Dim] holds
// new tokens, state the attention's state of the earlier ones (nil at the start), rot
// their rotary factors (rotary positions only). It returns the output and the state
// after the new tokens.
func (b *Block) StepRecurrent(g *autodiff.Graph, x, state *autodiff.Node, rot *RotaryAngles) (y, next *autodiff.Node) {
	self := func(h *autodiff.Node) *autodiff.Node {
		var out *autodiff.Node
		out, next = b.Attn.AttendRecurrent(g, h, state, rot)
		return out
	}
	y = b.residual(g, x, b.LN1, self)
	y = b.residual(g, y, b.LN2, func(h *autodiff.Node) *autodiff.Node { return b.FFN.Forward(g, h) })
	return y, next
}
