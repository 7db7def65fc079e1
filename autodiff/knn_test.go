package autodiff

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

// splitHeads turns x [B, T, H·d] into [B·H, T, d] (row b·H + h).
func splitHeads(g *Graph, x *Node, heads int) *Node {
	s := x.Shape()
	x = g.Reshape(x, []int{s[0], s[1], heads, s[2] / heads})
	x = g.Transpose(x, 0, 2, 1, 3)
	return g.Reshape(x, []int{s[0] * heads, s[1], s[2] / heads})
}

// knnReference is KNNDistance through the [N, Tq, Tk] distances.
func knnReference(g *Graph, q, k, keyMask *Node, opt KNNOptions) *Node {
	heads := max(opt.Heads, 1)
	if opt.HeadsInFeatures {
		q, k = splitHeads(g, q, heads), splitHeads(g, k, heads)
	}
	qs, ks := q.Shape(), k.Shape()
	d := g.Reshape(g.PairwiseDist(q, k, false), []int{qs[0] / heads, heads, qs[1], ks[1]})
	return g.Reshape(g.KthSmallest(d, keyMask, opt.K, opt.Mask), []int{qs[0], qs[1]})
}

// TestKNNDistanceMatchesKthSmallest compares KNNDistance with KthSmallest(PairwiseDist):
// values, chosen keys (through the gradients) and both head layouts, under every mask
// rule, with key masks, ranks beyond the visible keys, and duplicated keys (ties).
func TestKNNDistanceMatchesKthSmallest(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	masks := []Mask{{}, {Causal: true}, {Window: 3}, {Causal: true, Window: 2}, {Hollow: true}, {Causal: true, Offset: 2}, {Causal: true, Hollow: true}}
	for ci, c := range []struct{ b, h, tq, tk, d, k int }{
		{1, 1, 1, 1, 1, 1}, {2, 2, 5, 5, 3, 2}, {1, 3, 4, 7, 2, 3}, {2, 1, 6, 6, 4, 9}, {1, 2, 3, 5, 3, 1},
	} {
		for mi, mask := range masks {
			if mask.Offset > 0 && c.tk < c.tq+mask.Offset {
				continue
			}
			for _, inFeatures := range []bool{false, true} {
				for _, keyMasked := range []bool{false, true} {
					name := fmt.Sprintf("case%d/mask%d/infeatures=%v/keymask=%v", ci, mi, inFeatures, keyMasked)
					var q, k *tensor.Dense
					if inFeatures {
						q, k = randTensor(rng, 1, c.b, c.tq, c.h*c.d), randTensor(rng, 1, c.b, c.tk, c.h*c.d)
					} else {
						q, k = randTensor(rng, 1, c.b*c.h, c.tq, c.d), randTensor(rng, 1, c.b*c.h, c.tk, c.d)
					}
					if c.tk > 2 { // a tie: key 2 repeats key 0
						kd := k.Data().([]float64)
						w := k.Shape()[2]
						copy(kd[2*w:3*w], kd[:w])
					}
					inputs := map[string]*tensor.Dense{}
					if keyMasked {
						km := make([]float64, c.b*c.tk)
						for i := range km {
							if rng.Float64() < 0.7 {
								km[i] = 1
							}
						}
						inputs["km"] = tensor.New(tensor.WithShape(c.b, c.tk), tensor.WithBacking(km))
					}
					opt := KNNOptions{K: c.k, Mask: mask, Heads: c.h, HeadsInFeatures: inFeatures}
					run := func(ref bool) (out, gq, gk []float64) {
						names := []string{}
						if keyMasked {
							names = append(names, "km")
						}
						m, ps := newTestModel(t, Float64, map[string]*tensor.Dense{"q": q, "k": k}, names, func(g *Graph, p map[string]*Node) *Node {
							o := opt
							var km *Node
							if keyMasked {
								km = p["km"]
								o.KeyMask = km
							}
							if ref {
								return knnReference(g, p["q"], p["k"], km, o)
							}
							return g.KNNDistance(p["q"], p["k"], o)
						}, 1)
						res, err := m.Run(inputs, RunMode{Train: true, Backward: true})
						if err != nil {
							t.Fatalf("%s: %v", name, err)
						}
						return floats(res.Values["out"]), append([]float64(nil), ps["q"].GradFloat64s()...), append([]float64(nil), ps["k"].GradFloat64s()...)
					}
					got, gq, gk := run(false)
					want, wq, wk := run(true)
					checkValues(t, name+" distance", got, want, 1e-12, 1e-12)
					checkValues(t, name+" dq", gq, wq, 1e-10, 1e-12)
					checkValues(t, name+" dk", gk, wk, 1e-10, 1e-12)
				}
			}
		}
	}
}

func TestKNNDistanceGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for _, inFeatures := range []bool{false, true} {
		shape := []int{4, 5, 3}
		if inFeatures {
			shape = []int{2, 5, 6}
		}
		q, k := randTensor(rng, 1, shape...), randTensor(rng, 1, shape...)
		opt := KNNOptions{K: 2, Mask: Mask{Causal: true, Hollow: true}, Heads: 2, HeadsInFeatures: inFeatures}
		checkOp(t, fmt.Sprintf("KNNDistance/infeatures=%v", inFeatures), map[string]*tensor.Dense{"q": q, "k": k}, nil,
			func(g *Graph, p map[string]*Node) *Node { return g.KNNDistance(p["q"], p["k"], opt) },
			GradCheck{ATol: 1e-7, RTol: 1e-5})
	}
}

// TestKNNDistanceFloat32 runs the op in float32 (the AVX-512 distance kernel where the CPU
// has it, and the plain loop) against float64 on the same inputs, and against
// KthSmallest(PairwiseDist) in float32, which must give the same distances exactly.
func TestKNNDistanceFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	q, k := randTensor(rng, 1, 2, 40, 32), randTensor(rng, 1, 2, 37, 32)
	opt := KNNOptions{K: 4, Mask: Mask{Causal: true, Offset: 0, Window: 20}, Heads: 2, HeadsInFeatures: true}
	in := map[string]*tensor.Dense{"q": q, "k": k}
	fused := func(g *Graph, p map[string]*Node) *Node { return g.KNNDistance(p["q"], p["k"], opt) }
	ref := func(g *Graph, p map[string]*Node) *Node { return knnReference(g, p["q"], p["k"], nil, opt) }
	want := evalOp(t, Float64, false, nil, in, fused)
	paths := []bool{false}
	if hasAVX512 {
		paths = append(paths, true)
	}
	defer func(h bool) { hasAVX512 = h }(hasAVX512)
	for _, avx := range paths {
		hasAVX512 = avx
		got := evalOp(t, Float32, false, nil, in, fused)
		checkValues(t, fmt.Sprintf("avx512=%v: float32 distance vs float64", avx), got, want, 1e-5, 1e-6)
		checkValues(t, fmt.Sprintf("avx512=%v: float32 distance vs KthSmallest", avx), got, evalOp(t, Float32, false, nil, in, ref), 0, 0)
	}
}

func TestKNNDistanceErrors(t *testing.T) {
	mk := func(g *Graph, shape ...int) *Node {
		n := 1
		for _, d := range shape {
			n *= d
		}
		return g.ConstTensor(shape, make([]float64, n))
	}
	for _, c := range []struct {
		want string
		f    func(g *Graph) *Node
	}{
		{"want [N,Tq,d] and [N,Tk,d]", func(g *Graph) *Node { return g.KNNDistance(mk(g, 1, 2, 3), mk(g, 1, 2, 2), KNNOptions{K: 1}) }},
		{"K = 0", func(g *Graph) *Node { return g.KNNDistance(mk(g, 1, 2, 3), mk(g, 1, 2, 3), KNNOptions{}) }},
		{"3 heads do not divide 2 rows", func(g *Graph) *Node {
			return g.KNNDistance(mk(g, 2, 2, 3), mk(g, 2, 2, 3), KNNOptions{K: 1, Heads: 3})
		}},
		{"2 heads do not divide the width", func(g *Graph) *Node {
			return g.KNNDistance(mk(g, 2, 2, 3), mk(g, 2, 2, 3), KNNOptions{K: 1, Heads: 2, HeadsInFeatures: true})
		}},
		{"key mask (2, 3), want [1, 2]", func(g *Graph) *Node {
			return g.KNNDistance(mk(g, 2, 2, 3), mk(g, 2, 2, 3), KNNOptions{K: 1, Heads: 2, KeyMask: mk(g, 2, 3)})
		}},
		{"want a window and offset >= 0", func(g *Graph) *Node {
			return g.KNNDistance(mk(g, 1, 2, 3), mk(g, 1, 2, 3), KNNOptions{K: 1, Mask: Mask{Window: -1}})
		}},
	} {
		g := NewGraph(Float64, false, 0)
		if out := c.f(g); out != nil || g.Err() == nil || !contains(g.Err().Error(), c.want) {
			t.Errorf("got %v, err %v; want an error containing %q", out, g.Err(), c.want)
		}
	}
}

// TestKNNDistanceNaN: a NaN distance ranks after every number, so it is chosen only when
// nothing else is left.
func TestKNNDistanceNaN(t *testing.T) {
	q := tensor.New(tensor.WithShape(1, 1, 1), tensor.WithBacking([]float64{0}))
	k := tensor.New(tensor.WithShape(1, 3, 1), tensor.WithBacking([]float64{math.NaN(), 2, 1}))
	for kth, want := range map[int]float64{1: 1, 2: 2} {
		got := evalOp(t, Float64, false, nil, map[string]*tensor.Dense{"q": q, "k": k}, func(g *Graph, p map[string]*Node) *Node {
			return g.KNNDistance(p["q"], p["k"], KNNOptions{K: kth})
		})
		if got[0] != want {
			t.Errorf("K=%d: got %v, want %v", kth, got[0], want)
		}
	}
}
