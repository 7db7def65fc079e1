package autodiff

import (
	"fmt"
	"math"

	"gorgonia.org/tensor"
)

// KNNOptions are the parts of a KNNDistance call besides the queries and keys.
type KNNOptions struct {
	// K is the rank of the neighbour (K >= 1): 1 is the nearest key.
	K int
	// Mask says which keys each query sees (the rules of LocalMean).
	Mask Mask
	// KeyMask is nil or [B, Tk], zero marking keys that no query of batch element b sees.
	KeyMask *Node
	// Heads is the number of heads (0 means 1). Without HeadsInFeatures the queries and
	// keys are [B·Heads, T, d], row b·Heads + h; with it they are [B, T, Heads·d], head h
	// in features h·d … (h+1)·d − 1, as TiledLocalMean reads them.
	Heads           int
	HeadsInFeatures bool
}

// KNNDistance returns, per query and head, the Euclidean distance to its K-th nearest
// visible key: KthSmallest(PairwiseDist(q, k)) without the [N, Tq, Tk] distances, so in
// O(N·Tq) memory (each query scans the keys keeping a heap of K candidates). q is
// [N, Tq, d] and k [N, Tk, d] (see KNNOptions for the head layouts); the result is
// [B·Heads, Tq], row b·Heads + h. A query with fewer than K visible keys gets its
// farthest visible key, one with none gets 0. Ties pick the lowest key index; a NaN
// distance ranks after every number. The gradient flows through the chosen key's
// distance (the zero subgradient at distance 0), not through the choice.
func (g *Graph) KNNDistance(q, k *Node, opt KNNOptions) *Node {
	if !g.ok("KNNDistance", q, k) {
		return nil
	}
	qs, ks := q.n.Shape(), k.n.Shape()
	if qs.Dims() != 3 || ks.Dims() != 3 || qs[0] != ks[0] || qs[2] != ks[2] {
		return g.failf("KNNDistance: queries %v and keys %v (want [N,Tq,d] and [N,Tk,d])", qs, ks)
	}
	if opt.K < 1 {
		return g.failf("KNNDistance: K = %d, want K >= 1", opt.K)
	}
	if opt.Mask.Window < 0 || opt.Mask.Offset < 0 {
		return g.failf("KNNDistance: mask %v, want a window and offset >= 0", opt.Mask)
	}
	heads := max(opt.Heads, 1)
	batch := qs[0]
	if opt.HeadsInFeatures {
		if qs[2]%heads != 0 {
			return g.failf("KNNDistance: %d heads do not divide the width of queries %v", heads, qs)
		}
	} else {
		if qs[0]%heads != 0 {
			return g.failf("KNNDistance: %d heads do not divide %d rows", heads, qs[0])
		}
		batch = qs[0] / heads
	}
	kern := &knnKernel{k: opt.K, mask: opt.Mask, heads: heads, inFeatures: opt.HeadsInFeatures}
	if opt.KeyMask == nil {
		return g.applyFused(kern, q, k)
	}
	if !g.ok("KNNDistance", opt.KeyMask) {
		return nil
	}
	if ms := opt.KeyMask.n.Shape(); ms.Dims() != 2 || ms[0] != batch || ms[1] != ks[1] {
		return g.failf("KNNDistance: key mask %v, want [%d, %d]", ms, batch, ks[1])
	}
	kern.keyMasked = true
	return g.applyFused(kern, q, k, opt.KeyMask)
}

type knnKernel struct {
	k          int
	mask       Mask
	heads      int
	inFeatures bool
	keyMasked  bool
	// idx holds the chosen key of every output row entry (−1 for none) for the backward
	// pass.
	idx []int
}

func (k *knnKernel) opName() string { return "KNNDistance" }
func (k *knnKernel) hashAttrs() string {
	return fmt.Sprintf("{k:%d,heads:%d,infeatures:%v,keymask:%v}%v", k.k, k.heads, k.inFeatures, k.keyMasked, k.mask)
}
func (k *knnKernel) arity() int {
	if k.keyMasked {
		return 3
	}
	return 2
}
func (k *knnKernel) diffWRT() []bool     { return []bool{true, true, false}[:k.arity()] }
func (k *knnKernel) floatInputs() []bool { return []bool{true, true, true}[:k.arity()] }

// knnGeom is the layout of a KNNDistance call: the number of problems (batch·heads), the
// batch, the per-head width and the stride between positions.
type knnGeom struct {
	problems, batch, heads, tq, tk, d int
	rowStride                         int // distance between consecutive positions' features
	inFeatures                        bool
}

func (k *knnKernel) geom(qs, ks tensor.Shape) knnGeom {
	g := knnGeom{heads: k.heads, tq: qs[1], tk: ks[1], d: qs[2], rowStride: qs[2], inFeatures: k.inFeatures}
	if k.inFeatures {
		g.batch, g.d = qs[0], qs[2]/k.heads
	} else {
		g.batch = qs[0] / k.heads
	}
	g.problems = g.batch * g.heads
	return g
}

// base returns the offset of the features of problem p at position t of a sequence of
// n positions (queries or keys).
func (gm knnGeom) base(p, t, n int) int {
	if gm.inFeatures {
		b, h := p/gm.heads, p%gm.heads
		return (b*n+t)*gm.rowStride + h*gm.d
	}
	return (p*n + t) * gm.d
}

func (k *knnKernel) outShape(in []tensor.Shape) (tensor.Shape, error) {
	gm := k.geom(in[0], in[1])
	return tensor.Shape{gm.problems, gm.tq}, nil
}

func (k *knnKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	gm := k.geom(in[0].Shape(), in[1].Shape())
	if len(k.idx) != gm.problems*gm.tq {
		k.idx = make([]int, gm.problems*gm.tq)
	}
	switch in[0].Dtype() {
	case Float32:
		q := in[0].Float32s()
		knnFwd(gm, k.k, k.mask, q, in[1].Float32s(), keyMaskAt[float32](in, k.keyMasked), k.idx, out.Float32s())
	case Float64:
		q := in[0].Float64s()
		knnFwd(gm, k.k, k.mask, q, in[1].Float64s(), keyMaskAt[float64](in, k.keyMasked), k.idx, out.Float64s())
	}
	return nil
}

func keyMaskAt[T float](in []*tensor.Dense, masked bool) []T {
	if !masked {
		return nil
	}
	return flat[T](in[2])
}

// knnCand is a candidate neighbour: its distance and key index.
type knnCand[T float] struct {
	d T
	j int
}

// after reports whether a ranks after b: larger distance, NaN after every number, then the
// larger index.
func (a knnCand[T]) after(b knnCand[T]) bool {
	an, bn := a.d != a.d, b.d != b.d
	switch {
	case an != bn:
		return an
	case !an && a.d != b.d:
		return a.d > b.d
	}
	return a.j > b.j
}

func knnFwd[T float](gm knnGeom, kth int, mask Mask, q, k, keyMask []T, idx []int, out []T) {
	_, f32 := any(q).([]float32)
	avx := f32 && hasAVX512 && gm.d > 0
	parallelFor(gm.problems, gm.tq*gm.tk*gm.d, func(lo, hi int) {
		heap := make([]knnCand[T], 0, kth) // a max-heap on "ranks after" of the best kth
		row := make([]T, gm.tk)            // one query's distances: O(Tk) per worker
		var kt []float32                   // AVX-512: the keys of one problem as [d, Tk]
		if avx {
			kt = make([]float32, gm.d*gm.tk)
		}
		for p := lo; p < hi; p++ {
			var km []T
			if keyMask != nil {
				b := p / gm.heads
				km = keyMask[b*gm.tk : (b+1)*gm.tk]
			}
			if avx {
				k32 := any(k).([]float32)
				for s := 0; s < gm.tk; s++ {
					for i, v := range k32[gm.base(p, s, gm.tk):][:gm.d] {
						kt[i*gm.tk+s] = v
					}
				}
			}
			for t := 0; t < gm.tq; t++ {
				qt := q[gm.base(p, t, gm.tq):][:gm.d]
				first, last, self := mask.visible(t, gm.tk)
				if avx {
					// The kernel PairwiseDist uses, so that float32 distances are the same.
					r32, q32 := any(row).([]float32), any(qt).([]float32)
					for s0 := first; s0 < last; s0 += 16 {
						sqDistsAVX512(&q32[0], gm.d, &kt[s0], gm.tk, &r32[s0], laneMask(last-s0), true)
					}
				} else {
					for j := first; j < last; j++ {
						kj := k[gm.base(p, j, gm.tk):][:gm.d]
						var s T
						for i, qi := range qt {
							di := qi - kj[i]
							s += di * di
						}
						row[j] = T(math.Sqrt(float64(s)))
					}
				}
				heap = heap[:0]
				for j := first; j < last; j++ {
					if j == self || (km != nil && km[j] == 0) {
						continue
					}
					c := knnCand[T]{row[j], j}
					if len(heap) < kth {
						heap = append(heap, c)
						knnUp(heap, len(heap)-1)
					} else if heap[0].after(c) {
						heap[0] = c
						knnDown(heap, 0)
					}
				}
				r := p*gm.tq + t
				if len(heap) == 0 {
					idx[r], out[r] = -1, 0
					continue
				}
				idx[r], out[r] = heap[0].j, heap[0].d
			}
		}
	})
}

func knnUp[T float](h []knnCand[T], i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h[i].after(h[parent]) {
			return
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
}

func knnDown[T float](h []knnCand[T], i int) {
	for {
		l, largest := 2*i+1, i
		if l < len(h) && h[l].after(h[largest]) {
			largest = l
		}
		if r := l + 1; r < len(h) && h[r].after(h[largest]) {
			largest = r
		}
		if largest == i {
			return
		}
		h[i], h[largest] = h[largest], h[i]
		i = largest
	}
}

// backward: with c_t = g_t / d_t (0 where d_t = 0 or the query has no neighbour),
// dq_t = c_t (q_t − k_j) and dk_j = −Σ_{t chose j} c_t (q_t − k_j).
func (k *knnKernel) backward(wrt int, in []*tensor.Dense, out, gout, dst *tensor.Dense) error {
	gm := k.geom(in[0].Shape(), in[1].Shape())
	switch in[0].Dtype() {
	case Float32:
		q := in[0].Float32s()
		knnBwd(gm, wrt, k.idx, q, in[1].Float32s(), out.Float32s(), gout.Float32s(), dst.Float32s())
	case Float64:
		q := in[0].Float64s()
		knnBwd(gm, wrt, k.idx, q, in[1].Float64s(), out.Float64s(), gout.Float64s(), dst.Float64s())
	}
	return nil
}

func knnBwd[T float](gm knnGeom, wrt int, idx []int, q, k, out, g, dst []T) {
	clear(dst)
	// Serial over problems for the keys' gradient (several queries may choose one key);
	// the work is O(N·Tq·d), small beside the forward scan.
	for p := 0; p < gm.problems; p++ {
		for t := 0; t < gm.tq; t++ {
			r := p*gm.tq + t
			j := idx[r]
			if j < 0 || out[r] == 0 || g[r] == 0 {
				continue
			}
			c := g[r] / out[r]
			qo, ko := gm.base(p, t, gm.tq), gm.base(p, j, gm.tk)
			qt, kj := q[qo:][:gm.d], k[ko:][:gm.d]
			if wrt == 0 {
				dq := dst[qo:][:gm.d]
				for i, qi := range qt {
					dq[i] += c * (qi - kj[i])
				}
			} else {
				dk := dst[ko:][:gm.d]
				for i, qi := range qt {
					dk[i] -= c * (qi - kj[i])
				}
			}
		}
	}
}
