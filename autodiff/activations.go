package autodiff

import (
	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff/internal/vmath"
)

// Fused elementwise activations with hand-written backward passes: they reuse their
// buffers across steps (gorgonia's ops allocate every run and build their gradients from
// several more ops) and run in parallel over blocks.

// unaryKernel is an elementwise op y = f(x) whose gradient is g·f′ computed from x and y.
type unaryKernel struct {
	name string
	f32  func(x, y []float32)
	f64  func(x, y []float64)
	d32  func(x, y, g, dx []float32)
	d64  func(x, y, g, dx []float64)
}

func (k *unaryKernel) opName() string                                   { return k.name }
func (k *unaryKernel) hashAttrs() string                                { return "" }
func (k *unaryKernel) arity() int                                       { return 1 }
func (k *unaryKernel) diffWRT() []bool                                  { return []bool{true} }
func (k *unaryKernel) floatInputs() []bool                              { return []bool{true} }
func (k *unaryKernel) outShape(in []tensor.Shape) (tensor.Shape, error) { return in[0].Clone(), nil }

func (k *unaryKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	if isF32(in[0]) {
		blocks(len(flat[float32](in[0])), func(lo, hi int) { k.f32(flat[float32](in[0])[lo:hi], flat[float32](out)[lo:hi]) })
	} else {
		blocks(len(flat[float64](in[0])), func(lo, hi int) { k.f64(flat[float64](in[0])[lo:hi], flat[float64](out)[lo:hi]) })
	}
	return nil
}

func (k *unaryKernel) backward(_ int, in []*tensor.Dense, out, gout, dst *tensor.Dense) error {
	if isF32(in[0]) {
		x, y, g, d := flat[float32](in[0]), flat[float32](out), flat[float32](gout), flat[float32](dst)
		blocks(len(x), func(lo, hi int) { k.d32(x[lo:hi], y[lo:hi], g[lo:hi], d[lo:hi]) })
	} else {
		x, y, g, d := flat[float64](in[0]), flat[float64](out), flat[float64](gout), flat[float64](dst)
		blocks(len(x), func(lo, hi int) { k.d64(x[lo:hi], y[lo:hi], g[lo:hi], d[lo:hi]) })
	}
	return nil
}

// blocks runs fn over [0, n) in parallel blocks of a few thousand elements.
func blocks(n int, fn func(lo, hi int)) {
	const block = 4096
	nb := (n + block - 1) / block
	parallelFor(nb, block*2, func(lo, hi int) { fn(lo*block, min(hi*block, n)) })
}

// ReLU is x·1[x ≥ 0] with gradient g·1[x ≥ 0], as gorgonia's Rectify (the gradient at 0
// is g; NaN stays NaN).
func reluFwd[T float](x, y []T) {
	y = y[:len(x)]
	for i, v := range x {
		if v >= 0 {
			y[i] = v
		} else {
			y[i] = v * 0
		}
	}
}

func reluBwd[T float](x, _, g, dx []T) {
	g, dx = g[:len(x)], dx[:len(x)]
	for i, v := range x {
		if v >= 0 {
			dx[i] = g[i]
		} else {
			dx[i] = g[i] * 0
		}
	}
}

func sigmoidFwd32(x, y []float32) { vmath.Sigmoid(x, y) }

func sigmoidFwd64(x, y []float64) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] = sigmoid(v)
	}
}

// sigmoidBwd is g·y·(1 − y) from the output y.
func sigmoidBwd[T float](_, y, g, dx []T) {
	g, dx = g[:len(y)], dx[:len(y)]
	for i, s := range y {
		dx[i] = g[i] * s * (1 - s)
	}
}

// sigmoidBwd32 is sigmoidBwd vectorised, with the same bits.
func sigmoidBwd32(_, y, g, dx []float32) { vmath.SigmoidGrad(y, g, dx) }

// reluFwd32 and reluBwd32 are reluFwd and reluBwd vectorised, with the same bits.
func reluFwd32(x, y []float32)        { vmath.ReLU(x, y) }
func reluBwd32(x, _, g, dx []float32) { vmath.ReLUGrad(x, g, dx) }

func newReLUKernel() *unaryKernel {
	return &unaryKernel{name: "ReLU", f32: reluFwd32, f64: reluFwd[float64], d32: reluBwd32, d64: reluBwd[float64]}
}

func newSigmoidKernel() *unaryKernel {
	return &unaryKernel{name: "Sigmoid", f32: sigmoidFwd32, f64: sigmoidFwd64, d32: sigmoidBwd32, d64: sigmoidBwd[float64]}
}
