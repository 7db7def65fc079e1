package autodiff

import (
	"fmt"
	"math"

	"github.com/locusml/locus/autodiff/internal/vmath"
	"gorgonia.org/tensor"
)

// CrossEntropy returns the mean over non-ignored rows of −log softmax(logits)[target],
// a scalar, like PyTorch's F.cross_entropy with reduction='mean'. logits is [N, C] of the
// graph's float dtype; targets is a [N] integer tensor (tensor.Int) of class indices.
// Rows whose target equals ignoreIndex are skipped (PyTorch's default is −100); if every
// row is skipped the loss is 0 with a zero gradient. A target outside [0, C) other than
// ignoreIndex makes the run fail with an error naming the row and the value. The softmax
// uses each row's maximum, so very large logits are fine. Only logits get a gradient.
func (g *Graph) CrossEntropy(logits, targets *Node, ignoreIndex int) *Node {
	const name = "CrossEntropy"
	if !g.ok(name, logits, targets) {
		return nil
	}
	ls, ts := logits.n.Shape(), targets.n.Shape()
	if ls.Dims() != 2 || ts.Dims() != 1 || ts[0] != ls[0] {
		return g.failf("%s: logits %v and targets %v (want [N, C] logits and [N] targets)", name, ls, ts)
	}
	if targets.Dtype() != tensor.Int {
		return g.failf("%s: targets have dtype %v, want int", name, targets.Dtype())
	}
	return g.applyFused(&crossEntropyKernel{ignore: ignoreIndex}, logits, targets)
}

// crossEntropyKernel implements Graph.CrossEntropy. Inputs: logits [N, C], targets [N].
// Forward caches each row's log-sum-exp and the number of counted rows for backward.
type crossEntropyKernel struct {
	ignore int
	lse    []float64 // per row, written by forward
	loss   []float64 // per row scratch
	count  int
}

func (k *crossEntropyKernel) opName() string      { return "CrossEntropy" }
func (k *crossEntropyKernel) hashAttrs() string   { return fmt.Sprintf("{ignore=%d}", k.ignore) }
func (k *crossEntropyKernel) arity() int          { return 2 }
func (k *crossEntropyKernel) diffWRT() []bool     { return []bool{true, false} }
func (k *crossEntropyKernel) floatInputs() []bool { return []bool{true, false} }
func (k *crossEntropyKernel) outShape([]tensor.Shape) (tensor.Shape, error) {
	return tensor.Shape{}, nil
}

func (k *crossEntropyKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	rows, cols := in[0].Shape()[0], in[0].Shape()[1]
	targets := in[1].Ints()
	k.count = 0
	for r, t := range targets {
		if t == k.ignore {
			continue
		}
		if t < 0 || t >= cols {
			return fmt.Errorf("target %d at row %d is outside [0, %d) and is not the ignore index %d", t, r, cols, k.ignore)
		}
		k.count++
	}
	k.lse, k.loss = grow(k.lse, rows), grow(k.loss, rows)
	var loss float64
	if isF32(in[0]) {
		loss = crossEntropyForward(k, flat[float32](in[0]), targets, cols)
	} else {
		loss = crossEntropyForward(k, flat[float64](in[0]), targets, cols)
	}
	if isF32(out) {
		flat[float32](out)[0] = float32(loss)
	} else {
		flat[float64](out)[0] = loss
	}
	return nil
}

func crossEntropyForward[T float](k *crossEntropyKernel, x []T, targets []int, cols int) float64 {
	parallelFor(len(targets), cols*4, func(lo, hi int) {
		e := make([]T, cols) // exp(row − max); float32 rows use package vmath's kernels
		for r := lo; r < hi; r++ {
			t := targets[r]
			if t == k.ignore {
				k.loss[r] = 0
				continue
			}
			xr := x[r*cols : (r+1)*cols]
			m := maxOf(xr)
			copy(e, xr)
			lse := float64(m) + math.Log(float64(expShiftSum(e, m)))
			k.lse[r] = lse
			k.loss[r] = lse - float64(xr[t])
		}
	})
	if k.count == 0 {
		return 0
	}
	var sum float64
	for _, l := range k.loss {
		sum += l
	}
	return sum / float64(k.count)
}

func (k *crossEntropyKernel) backward(_ int, in []*tensor.Dense, _, gout, dst *tensor.Dense) error {
	if len(k.lse) != in[0].Shape()[0] {
		return fmt.Errorf("backward ran before forward")
	}
	if isF32(in[0]) {
		crossEntropyBackward(k, flat[float32](in[0]), in[1].Ints(), flat[float32](gout)[0], flat[float32](dst), in[0].Shape()[1])
	} else {
		crossEntropyBackward(k, flat[float64](in[0]), in[1].Ints(), flat[float64](gout)[0], flat[float64](dst), in[0].Shape()[1])
	}
	return nil
}

// crossEntropyBackward: dlogits = gout · (softmax − onehot(target)) / count on counted
// rows, 0 on ignored rows.
func crossEntropyBackward[T float](k *crossEntropyKernel, x []T, targets []int, gout T, dx []T, cols int) {
	scale := 0.0
	if k.count > 0 {
		scale = float64(gout) / float64(k.count)
	}
	parallelFor(len(targets), cols*4, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			t := targets[r]
			xr, dr := x[r*cols:(r+1)*cols], dx[r*cols:(r+1)*cols]
			if t == k.ignore || k.count == 0 {
				clear(dr)
				continue
			}
			lse := k.lse[r]
			if _, ok := any(dr).([]float32); ok {
				// scale·softmax on the vector kernels, then the target's −scale.
				copy(dr, xr)
				expShiftSum(dr, T(lse))
				scaleBy(dr, T(scale))
				dr[t] -= T(scale)
				continue
			}
			for j, v := range xr {
				p := math.Exp(float64(v) - lse)
				if j == t {
					p--
				}
				dr[j] = T(scale * p)
			}
		}
	})
}

// MSE returns the mean squared error mean((pred − target)²), a scalar. pred and target
// must have the same shape; both get gradients.
func (g *Graph) MSE(pred, target *Node) *Node {
	if !g.sameShape("MSE", pred, target) {
		return nil
	}
	return g.applyFused(&mseKernel{}, pred, target)
}

// mseKernel implements Graph.MSE. Inputs: pred, target.
type mseKernel struct {
	part []float64 // per block partial sums
}

const mseBlock = 4096

func (k *mseKernel) opName() string      { return "MSE" }
func (k *mseKernel) hashAttrs() string   { return "" }
func (k *mseKernel) arity() int          { return 2 }
func (k *mseKernel) diffWRT() []bool     { return []bool{true, true} }
func (k *mseKernel) floatInputs() []bool { return []bool{true, true} }
func (k *mseKernel) outShape([]tensor.Shape) (tensor.Shape, error) {
	return tensor.Shape{}, nil
}

func (k *mseKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	n := in[0].Shape().TotalSize()
	k.part = grow(k.part, (n+mseBlock-1)/mseBlock)
	var loss float64
	if isF32(in[0]) {
		loss = mseForward(k.part, flat[float32](in[0]), flat[float32](in[1]))
	} else {
		loss = mseForward(k.part, flat[float64](in[0]), flat[float64](in[1]))
	}
	if isF32(out) {
		flat[float32](out)[0] = float32(loss)
	} else {
		flat[float64](out)[0] = loss
	}
	return nil
}

// mseForward returns Σ (p − t)²/n, summed per block of mseBlock (in parallel) and then
// over the blocks in order. Float32 blocks are summed by vmath.SqDiffSum (vectorised, in
// an order that does not depend on the CPU).
func mseForward[T float](part []float64, p, t []T) float64 {
	p32, isF32 := any(p).([]float32)
	t32, _ := any(t).([]float32)
	parallelFor(len(part), mseBlock*3, func(lo, hi int) {
		for b := lo; b < hi; b++ {
			if isF32 {
				part[b] = vmath.SqDiffSum(p32[b*mseBlock:min((b+1)*mseBlock, len(p))], t32[b*mseBlock:min((b+1)*mseBlock, len(t))])
				continue
			}
			var s float64
			for i := b * mseBlock; i < min((b+1)*mseBlock, len(p)); i++ {
				d := float64(p[i]) - float64(t[i])
				s += d * d
			}
			part[b] = s
		}
	})
	var sum float64
	for _, s := range part {
		sum += s
	}
	return sum / float64(len(p))
}

func (k *mseKernel) backward(wrt int, in []*tensor.Dense, _, gout, dst *tensor.Dense) error {
	sign := 1.0
	if wrt == 1 {
		sign = -1
	}
	if isF32(in[0]) {
		mseBackward(flat[float32](in[0]), flat[float32](in[1]), sign*float64(flat[float32](gout)[0]), flat[float32](dst))
	} else {
		mseBackward(flat[float64](in[0]), flat[float64](in[1]), sign*float64(flat[float64](gout)[0]), flat[float64](dst))
	}
	return nil
}

// mseBackward sets d = scale · 2(p − t)/n.
func mseBackward[T float](p, t []T, scale float64, d []T) {
	c := 2 * scale / float64(len(p))
	blocks := (len(p) + mseBlock - 1) / mseBlock
	p32, isF32 := any(p).([]float32)
	t32, _ := any(t).([]float32)
	d32, _ := any(d).([]float32)
	parallelFor(blocks, mseBlock*2, func(lo, hi int) {
		if isF32 {
			lo, hi := lo*mseBlock, min(hi*mseBlock, len(p))
			vmath.ScaledDiff(p32[lo:hi], t32[lo:hi], c, d32[lo:hi])
			return
		}
		for i := lo * mseBlock; i < min(hi*mseBlock, len(p)); i++ {
			d[i] = T(c * (float64(p[i]) - float64(t[i])))
		}
	})
}
