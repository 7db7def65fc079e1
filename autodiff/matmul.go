package autodiff

import (
	"fmt"

	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff/internal/gemm"
)

// This file holds the fused matrix products: MatMul, BatchedMatMul and Linear run on the
// packed, register-blocked sgemm of internal/gemm and differentiate with transpose flags,
// so no transposed copy of an operand or gradient is ever materialised and the output and
// gradient buffers are reused from step to step.

// Linear returns x·wᵀ + b for x [..., in], w [out, in] (PyTorch's nn.Linear layout) and
// b [out] or nil, as [..., out]. It is one fused op: no reshape or transpose copies, and
// the bias is added in the same pass.
func (g *Graph) Linear(x, w, b *Node) *Node {
	inputs := []*Node{x, w}
	if b != nil {
		inputs = append(inputs, b)
	}
	if !g.ok("Linear", inputs...) {
		return nil
	}
	xs, ws := x.n.Shape(), w.n.Shape()
	if ws.Dims() != 2 || xs.Dims() < 1 || xs[xs.Dims()-1] != ws[1] {
		return g.failf("Linear: input %v and weight %v (want [..., in] and [out, in])", xs, ws)
	}
	if b != nil {
		if bs := b.n.Shape(); bs.Dims() != 1 || bs[0] != ws[0] {
			return g.failf("Linear: bias %v, want [%d]", bs, ws[0])
		}
	}
	return g.applyFused(&linearKernel{bias: b != nil}, inputs...)
}

type linearKernel struct{ bias bool }

func (k *linearKernel) opName() string    { return "Linear" }
func (k *linearKernel) hashAttrs() string { return fmt.Sprintf("{bias:%v}", k.bias) }
func (k *linearKernel) arity() int {
	if k.bias {
		return 3
	}
	return 2
}
func (k *linearKernel) diffWRT() []bool     { return []bool{true, true, true}[:k.arity()] }
func (k *linearKernel) floatInputs() []bool { return []bool{true, true, true}[:k.arity()] }
func (k *linearKernel) outShape(in []tensor.Shape) (tensor.Shape, error) {
	s := in[0].Clone()
	s[s.Dims()-1] = in[1][0]
	return s, nil
}

func (k *linearKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	nOut, nIn := in[1].Shape()[0], in[1].Shape()[1]
	rows := in[0].Shape().TotalSize() / nIn
	switch in[0].Dtype() {
	case Float32:
		x := in[0].Float32s()
		y := out.Float32s()
		if k.bias {
			// The bias is added to the tiles as the product stores them (no pass
			// filling y with it first: 1.4-2.5 % of charlm's steps at 256 and 384 wide).
			gemm.ParallelBias(false, true, rows, nOut, nIn, x, nIn, in[1].Float32s(), nIn, in[2].Float32s(), y, nOut)
			break
		}
		gemm.Parallel(false, true, rows, nOut, nIn, 1, x, nIn, in[1].Float32s(), nIn, 0, y, nOut)
	case Float64:
		x := in[0].Float64s()
		y := out.Float64s()
		beta := 0.0
		if k.bias {
			fillRows(y, in[2].Float64s())
			beta = 1
		}
		gemm.Dgemm(false, true, rows, nOut, nIn, 1, x, nIn, in[1].Float64s(), nIn, beta, y, nOut)
	}
	return nil
}

// fillRows copies b into every row of y (len(b) columns).
func fillRows[T float](y, b []T) {
	d := len(b)
	for r := 0; r < len(y); r += d {
		copy(y[r:r+d], b)
	}
}

// gradReads: dx = g·W, dW = gᵀ·x, db = Σ g; the output is never read.
func (k *linearKernel) gradReads(wrt int) []bool {
	switch wrt {
	case 0:
		return reads(k.arity(), 1)
	case 1:
		return reads(k.arity(), 0)
	}
	return reads(k.arity())
}

func (k *linearKernel) backward(wrt int, in []*tensor.Dense, out, gout, dst *tensor.Dense) error {
	return k.backwardInto(wrt, in, out, gout, dst, false)
}

// backwardInto is backward that, with accumulate, adds the gradient into dst (the
// products with beta 1).
func (k *linearKernel) backwardInto(wrt int, in []*tensor.Dense, _, gout, dst *tensor.Dense, accumulate bool) error {
	nOut, nIn := in[1].Shape()[0], in[1].Shape()[1]
	rows := in[0].Shape().TotalSize() / nIn
	beta := 0.0
	if accumulate {
		beta = 1
	}
	switch gout.Dtype() {
	case Float32:
		gy := gout.Float32s()
		x, w, d := in[0].Float32s(), in[1].Float32s(), dst.Float32s()
		switch wrt {
		case 0: // dx = g·W
			gemm.Parallel(false, false, rows, nIn, nOut, 1, gy, nOut, w, nIn, float32(beta), d, nIn)
		case 1: // dW = gᵀ·x
			gemm.Parallel(true, false, nOut, nIn, rows, 1, gy, nOut, x, nIn, float32(beta), d, nIn)
		case 2:
			sumRows(gy, d, accumulate)
		}
	case Float64:
		gy := gout.Float64s()
		x, w, d := in[0].Float64s(), in[1].Float64s(), dst.Float64s()
		switch wrt {
		case 0:
			gemm.Dgemm(false, false, rows, nIn, nOut, 1, gy, nOut, w, nIn, beta, d, nIn)
		case 1:
			gemm.Dgemm(true, false, nOut, nIn, rows, 1, gy, nOut, x, nIn, beta, d, nIn)
		case 2:
			sumRows(gy, d, accumulate)
		}
	}
	return nil
}

// matmulKernel is C = op(A)·op(B) for 2-D operands or, batched, for every leading index
// of 3-D operands.
type matmulKernel struct {
	batched        bool
	transA, transB bool
}

func (k *matmulKernel) opName() string {
	if k.batched {
		return "BatchedMatMul"
	}
	return "MatMul"
}
func (k *matmulKernel) hashAttrs() string   { return fmt.Sprintf("{tA:%v,tB:%v}", k.transA, k.transB) }
func (k *matmulKernel) arity() int          { return 2 }
func (k *matmulKernel) diffWRT() []bool     { return []bool{true, true} }
func (k *matmulKernel) floatInputs() []bool { return []bool{true, true} }

// mmDims are the sizes of one product: op(A) is m×k, op(B) k×n; lda and ldb are the
// stored row lengths.
type mmDims struct{ batch, m, n, k, lda, ldb int }

func (k *matmulKernel) dims(as, bs tensor.Shape) mmDims {
	d := mmDims{batch: 1}
	if k.batched {
		d.batch = as[0]
		as, bs = as[1:], bs[1:]
	}
	d.m, d.k, d.lda = as[0], as[1], as[1]
	if k.transA {
		d.m, d.k = as[1], as[0]
	}
	d.n, d.ldb = bs[1], bs[1]
	if k.transB {
		d.n = bs[0]
	}
	return d
}

func (k *matmulKernel) outShape(in []tensor.Shape) (tensor.Shape, error) {
	d := k.dims(in[0], in[1])
	if k.batched {
		return tensor.Shape{d.batch, d.m, d.n}, nil
	}
	return tensor.Shape{d.m, d.n}, nil
}

func (k *matmulKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	d := k.dims(in[0].Shape(), in[1].Shape())
	switch in[0].Dtype() {
	case Float32:
		a := in[0].Float32s()
		batchedGemm(d.batch, k.transA, k.transB, d.m, d.n, d.k, a, d.lda, d.m*d.k, in[1].Float32s(), d.ldb, d.k*d.n, out.Float32s(), d.n, d.m*d.n)
	case Float64:
		a := in[0].Float64s()
		batchedGemm(d.batch, k.transA, k.transB, d.m, d.n, d.k, a, d.lda, d.m*d.k, in[1].Float64s(), d.ldb, d.k*d.n, out.Float64s(), d.n, d.m*d.n)
	}
	return nil
}

// gradReads: each operand's gradient reads the other operand.
func (k *matmulKernel) gradReads(wrt int) []bool { return reads(2, 1-wrt) }

func (k *matmulKernel) backward(wrt int, in []*tensor.Dense, _, gout, dst *tensor.Dense) error {
	d := k.dims(in[0].Shape(), in[1].Shape())
	switch gout.Dtype() {
	case Float32:
		gy := gout.Float32s()
		matmulGrad(k, d, wrt, in[0].Float32s(), in[1].Float32s(), gy, dst.Float32s())
	case Float64:
		gy := gout.Float64s()
		matmulGrad(k, d, wrt, in[0].Float64s(), in[1].Float64s(), gy, dst.Float64s())
	}
	return nil
}

// matmulGrad writes the gradient of C = op(A)·op(B) with respect to A (wrt 0) or B into
// dst, given G = ∂L/∂C:
//
//	dA = G·op(B)ᵀ, or op(B)·Gᵀ when A is transposed;
//	dB = op(A)ᵀ·G, or Gᵀ·op(A) when B is transposed.
func matmulGrad[T float](k *matmulKernel, d mmDims, wrt int, a, b, gy, dst []T) {
	sa, sb, sc := d.m*d.k, d.k*d.n, d.m*d.n
	if wrt == 0 {
		if !k.transA { // dA [m,k] = G [m,n] · op(B)ᵀ
			batchedGemm(d.batch, false, !k.transB, d.m, d.k, d.n, gy, d.n, sc, b, d.ldb, sb, dst, d.k, sa)
		} else { // dA [k,m] = op(B) · Gᵀ
			batchedGemm(d.batch, k.transB, true, d.k, d.m, d.n, b, d.ldb, sb, gy, d.n, sc, dst, d.m, sa)
		}
		return
	}
	if !k.transB { // dB [k,n] = op(A)ᵀ · G
		batchedGemm(d.batch, !k.transA, false, d.k, d.n, d.m, a, d.lda, sa, gy, d.n, sc, dst, d.n, sb)
	} else { // dB [n,k] = Gᵀ · op(A)
		batchedGemm(d.batch, true, k.transA, d.n, d.k, d.m, gy, d.n, sc, a, d.lda, sa, dst, d.k, sb)
	}
}

// batchedGemm sets c_i = op(a_i)·op(b_i) for batch matrices at strides sa, sb, sc; the
// batch runs in parallel, or a single product is split over rows.
func batchedGemm[T float](batch int, tA, tB bool, m, n, k int, a []T, lda, sa int, b []T, ldb, sb int, c []T, ldc, sc int) {
	switch a := any(a).(type) {
	case []float32:
		b, c := any(b).([]float32), any(c).([]float32)
		if batch == 1 {
			gemm.Parallel(tA, tB, m, n, k, 1, a, lda, b, ldb, 0, c, ldc)
			return
		}
		parallelFor(batch, m*n*k/8+1, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				gemm.Sgemm(tA, tB, m, n, k, 1, a[i*sa:], lda, b[i*sb:], ldb, 0, c[i*sc:], ldc)
			}
		})
	case []float64:
		b, c := any(b).([]float64), any(c).([]float64)
		for i := range batch {
			gemm.Dgemm(tA, tB, m, n, k, 1, a[i*sa:], lda, b[i*sb:], ldb, 0, c[i*sc:], ldc)
		}
	}
}
