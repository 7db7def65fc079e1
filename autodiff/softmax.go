package autodiff

import (
	"math"

	"gorgonia.org/tensor"
)

// Softmax normalises x over its last axis: y = exp(x − max) / Σ exp(x − max), with the
// maximum taken per row. mask may be nil or a tensor of x's shape whose zero entries are
// excluded (their output is 0). A row with every entry masked gives zeros and a zero
// gradient, never NaN.
func (g *Graph) Softmax(x, mask *Node) *Node { return g.softmax("Softmax", x, mask, false) }

// LogSoftmax returns log Softmax(x, mask) over the last axis, computed stably. Masked
// entries and fully masked rows give 0 (not −Inf), with zero gradient.
func (g *Graph) LogSoftmax(x, mask *Node) *Node { return g.softmax("LogSoftmax", x, mask, true) }

func (g *Graph) softmax(name string, x, mask *Node, log bool) *Node {
	if !g.ok(name, x) {
		return nil
	}
	if x.Dims() < 1 {
		return g.failf("%s: needs at least one axis, got a scalar", name)
	}
	k := &softmaxKernel{log: log}
	if mask == nil {
		return g.applyFused(k, x)
	}
	if !g.sameShape(name+" mask", x, mask) {
		return nil
	}
	k.masked = true
	return g.applyFused(k, x, mask)
}

type softmaxKernel struct{ log, masked bool }

func (k *softmaxKernel) opName() string {
	if k.log {
		return "LogSoftmax"
	}
	return "Softmax"
}
func (k *softmaxKernel) hashAttrs() string {
	if k.masked {
		return "{masked}"
	}
	return ""
}
func (k *softmaxKernel) arity() int {
	if k.masked {
		return 2
	}
	return 1
}
func (k *softmaxKernel) diffWRT() []bool     { return []bool{true, false}[:k.arity()] }
func (k *softmaxKernel) floatInputs() []bool { return []bool{true, true}[:k.arity()] }
func (k *softmaxKernel) outShape(in []tensor.Shape) (tensor.Shape, error) {
	return in[0].Clone(), nil
}

func lastAxis(s tensor.Shape) (rows, cols int) {
	cols = s[s.Dims()-1]
	return s.TotalSize() / max(cols, 1), cols
}

func (k *softmaxKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	rows, cols := lastAxis(in[0].Shape())
	switch in[0].Dtype() {
	case Float32:
		x := in[0].Float32s()
		softmaxRows(x, maskData[float32](in, k.masked), out.Float32s(), rows, cols, k.log)
	case Float64:
		x := in[0].Float64s()
		softmaxRows(x, maskData[float64](in, k.masked), out.Float64s(), rows, cols, k.log)
	}
	return nil
}

func maskData[T float](in []*tensor.Dense, masked bool) []T {
	if !masked {
		return nil
	}
	return flat[T](in[1])
}

func softmaxRows[T float](x, mask, y []T, rows, cols int, log bool) {
	parallelFor(rows, cols*8, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, yr := x[r*cols:(r+1)*cols], y[r*cols:(r+1)*cols]
			var mr []T
			if mask != nil {
				mr = mask[r*cols : (r+1)*cols]
			}
			softmaxRow(xr, mr, yr, log)
		}
	})
}

// softmaxRow normalises one row in float64 arithmetic.
func softmaxRow[T float](x, mask, y []T, log bool) {
	m := math.Inf(-1)
	for j, v := range x {
		if (mask == nil || mask[j] != 0) && float64(v) > m {
			m = float64(v)
		}
	}
	if math.IsInf(m, -1) {
		// Every entry masked (or −Inf): no weight anywhere.
		clear(y)
		return
	}
	var s float64
	for j, v := range x {
		if mask != nil && mask[j] == 0 {
			continue
		}
		s += math.Exp(float64(v) - m)
	}
	lse := m + math.Log(s)
	for j, v := range x {
		switch {
		case mask != nil && mask[j] == 0:
			y[j] = 0
		case log:
			y[j] = T(float64(v) - lse)
		default:
			y[j] = T(math.Exp(float64(v) - lse))
		}
	}
}

// gradReads: the gradient reads the output and the mask, not the scores.
func (k *softmaxKernel) gradReads(int) []bool {
	r := reads(k.arity(), k.arity())
	for i := 1; i < k.arity(); i++ {
		r[i] = true
	}
	return r
}

func (k *softmaxKernel) backward(_ int, in []*tensor.Dense, out, gout, dst *tensor.Dense) error {
	rows, cols := lastAxis(in[0].Shape())
	switch out.Dtype() {
	case Float32:
		y := out.Float32s()
		softmaxGradRows(y, maskData[float32](in, k.masked), gout.Float32s(), dst.Float32s(), rows, cols, k.log)
	case Float64:
		y := out.Float64s()
		softmaxGradRows(y, maskData[float64](in, k.masked), gout.Float64s(), dst.Float64s(), rows, cols, k.log)
	}
	return nil
}

// softmaxGradRows: for softmax dx = y ⊙ (g − Σ g⊙y); for log-softmax dx = g − p Σ g with
// p = exp(y). Masked entries get zero gradient.
func softmaxGradRows[T float](y, mask, g, dx []T, rows, cols int, log bool) {
	parallelFor(rows, cols*4, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			yr, gr, dr := y[r*cols:(r+1)*cols], g[r*cols:(r+1)*cols], dx[r*cols:(r+1)*cols]
			var mr []T
			if mask != nil {
				mr = mask[r*cols : (r+1)*cols]
			}
			live := func(j int) bool { return mr == nil || mr[j] != 0 }
			var s float64
			any := false
			for j := range yr {
				if !live(j) {
					continue
				}
				any = true
				if log {
					s += float64(gr[j])
				} else {
					s += float64(gr[j]) * float64(yr[j])
				}
			}
			for j := range yr {
				switch {
				case !live(j) || !any:
					dr[j] = 0
				case log:
					dr[j] = T(float64(gr[j]) - math.Exp(float64(yr[j]))*s)
				default:
					dr[j] = T(float64(yr[j]) * (float64(gr[j]) - s))
				}
			}
		}
	})
}
