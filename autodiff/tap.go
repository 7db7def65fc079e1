package autodiff

import (
	"fmt"

	"gorgonia.org/tensor"
)

// Taps are a graph's optional extra outputs, for looking inside a model without changing
// its builder: a layer that has something to show (the weights of its local mean, its
// per-query bandwidths) calls Tap when Tapping reports that the graph is built for
// inspection (RunMode.Taps), and Model.Run returns the tapped values in Result.Taps.
// A graph built for training or evaluation has no taps and costs nothing extra.

// Tapping reports whether the graph is built with taps (RunMode.Taps).
func (g *Graph) Tapping() bool { return g.tapping }

// Tap records n as the extra output called name when the graph is built with taps, and
// does nothing otherwise. A name tapped twice (a layer called twice in one graph) gets
// the suffix "#2", "#3", ... in call order.
func (g *Graph) Tap(name string, n *Node) {
	if !g.tapping || n == nil || g.err != nil {
		return
	}
	if g.taps == nil {
		g.taps = map[string]*Node{}
	}
	key := name
	for i := 2; g.taps[key] != nil; i++ {
		key = fmt.Sprintf("%s#%d", name, i)
	}
	g.taps[key] = n
}

// LocalMeanWeights returns the normalised weights w [..., Tq, Tk] that the local-mean op
// producing m (the output of LocalMean, Attention or KernelAttention) uses in the same
// run: the op's own weights, copied after its forward pass, not a recomputation. For
// LocalMean they have the shape of its scores; for the others they are [B, H, Tq, Tk].
// visible has
// the same shape: 1 where the key is visible to the query, 0 where the op's Mask
// (causal, window, hollow) or its key mask hides it, so that a hidden key (weight 0 by
// construction) can be told from a visible key of zero kernel weight. Neither output is
// differentiable.
func (g *Graph) LocalMeanWeights(m *Node) (weights, visible *Node) {
	if !g.ok("LocalMeanWeights", m) {
		return nil, nil
	}
	op, ok := m.n.Op().(*fwdOp)
	if !ok {
		g.failf("LocalMeanWeights: %v is not the output of LocalMean, Attention or KernelAttention", m)
		return nil, nil
	}
	src := weightSource{op: op}
	var keyMask *Node
	switch k := undropped(op.k).(type) {
	case *localMeanKernel:
		src.mask, src.keyMasked, keyMask = k.mask, k.keyMasked, k.keyMask
		src.shape = op.inShapes[0].Clone()
		if src.shape.Dims() == 4 {
			src.heads = src.shape[1]
		} else {
			src.heads = 1
		}
	case *attentionKernel:
		src.mask, src.keyMasked, src.heads, keyMask = k.mask, k.keyMasked, k.heads, k.keyMask
		qs, vs := op.inShapes[0], op.inShapes[2]
		src.shape = tensor.Shape{qs[0], k.heads, qs[1], vs[1]}
	case *kernelAttention:
		src.mask, src.keyMasked, src.heads, keyMask = k.mask, k.maskIn > 0, k.heads, k.keyMask
		qs, vs := op.inShapes[0], op.inShapes[2]
		b := qs[0]
		if !k.headsInFeatures {
			b /= k.heads
		}
		src.shape = tensor.Shape{b, k.heads, qs[1], vs[1]}
	default:
		g.failf("LocalMeanWeights: %v is the output of %s, not of LocalMean, Attention or KernelAttention", m, op.name)
		return nil, nil
	}
	inputs := []*Node{m}
	if src.keyMasked {
		inputs = append(inputs, keyMask)
	}
	weights = g.applyFused(&weightsKernel{src: src}, inputs...)
	visible = g.applyFused(&weightsKernel{src: src, visible: true}, inputs...)
	return weights, visible
}

// weightSource describes the local-mean op whose weights a weightsKernel reads.
type weightSource struct {
	op        *fwdOp
	shape     tensor.Shape // of the weights: [..., Tq, Tk]
	heads     int          // problems per key-mask row
	mask      Mask
	keyMasked bool
}

// weightsKernel copies a local-mean op's weights (or writes their visibility) into its
// output. Its input is the op's output, so it runs after the op.
type weightsKernel struct {
	src     weightSource
	visible bool
}

func (k *weightsKernel) opName() string {
	if k.visible {
		return "LocalMeanVisible"
	}
	return "LocalMeanWeights"
}
func (k *weightsKernel) hashAttrs() string { return fmt.Sprintf("{of:%p}", k.src.op) }
func (k *weightsKernel) arity() int {
	if k.src.keyMasked {
		return 2
	}
	return 1
}
func (k *weightsKernel) diffWRT() []bool     { return make([]bool, k.arity()) }
func (k *weightsKernel) floatInputs() []bool { return []bool{true, true}[:k.arity()] }
func (k *weightsKernel) outShape([]tensor.Shape) (tensor.Shape, error) {
	return k.src.shape.Clone(), nil
}
func (k *weightsKernel) backward(int, []*tensor.Dense, *tensor.Dense, *tensor.Dense, *tensor.Dense) error {
	return fmt.Errorf("%s has no gradient", k.opName())
}

func (k *weightsKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	if k.visible {
		switch out.Dtype() {
		case Float32:
			writeVisible(k.src, tapKeyMask[float32](in), out.Float32s())
		case Float64:
			writeVisible(k.src, tapKeyMask[float64](in), out.Float64s())
		}
		return nil
	}
	var w32 []float32
	var w64 []float64
	switch s := undropped(k.src.op.k).(type) {
	case *localMeanKernel:
		w32, w64 = s.w32, s.w64
	case *attentionKernel:
		w32, w64 = s.p32, s.p64
	case *kernelAttention:
		w32, w64 = s.p32, s.p64
	}
	switch out.Dtype() {
	case Float32:
		if len(w32) != out.Shape().TotalSize() {
			return fmt.Errorf("the local mean has not run")
		}
		copyVisible(k.src, w32, out.Float32s())
	case Float64:
		if len(w64) != out.Shape().TotalSize() {
			return fmt.Errorf("the local mean has not run")
		}
		copyVisible(k.src, w64, out.Float64s())
	}
	return nil
}

// copyVisible copies the weights of the keys the mask lets each query see and writes 0
// for the others: the local-mean ops write only the key blocks they visit, and the
// rest of a buffer shared by a buffer plan holds other values.
func copyVisible[T float](src weightSource, w, out []T) {
	nd := src.shape.Dims()
	tq, tk := src.shape[nd-2], src.shape[nd-1]
	for p := range len(out) / (tq * tk) {
		for t := range tq {
			lo, hi, _ := src.mask.visible(t, tk)
			lo = min(lo, tk)
			hi = max(lo, min(hi, tk))
			r := (p*tq + t) * tk
			o := out[r : r+tk]
			clear(o[:lo])
			copy(o[lo:hi], w[r+lo:r+hi])
			clear(o[hi:])
		}
	}
}

// writeVisible writes 1 for the visible keys of every query and 0 for the hidden ones;
// km is nil or the [P/heads, Tk] key mask.
func writeVisible[T float](src weightSource, km []T, out []T) {
	nd := src.shape.Dims()
	tq, tk := src.shape[nd-2], src.shape[nd-1]
	for p := range len(out) / (tq * tk) {
		var row []T
		if km != nil {
			b := p / src.heads
			row = km[b*tk : (b+1)*tk]
		}
		for t := range tq {
			lo, hi, self := src.mask.visible(t, tk)
			o := out[(p*tq+t)*tk : (p*tq+t+1)*tk]
			for s := range o {
				v := s >= lo && s < hi && s != self && (row == nil || row[s] != 0)
				o[s] = 0
				if v {
					o[s] = 1
				}
			}
		}
	}
}

// Visible reports whether the mask lets query t see key s among tk keys.
func (m Mask) Visible(t, s, tk int) bool {
	lo, hi, self := m.visible(t, tk)
	return s >= lo && s < hi && s != self
}

// tapKeyMask returns the key mask input of a weightsKernel, or nil.
func tapKeyMask[T float](in []*tensor.Dense) []T {
	if len(in) < 2 {
		return nil
	}
	return flat[T](in[1])
}
