package autodiff

import (
	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff/internal/gemm"
	"github.com/locusml/locus/autodiff/internal/vmath"
)

// KernelAttention is the local mean of TiledLocalMean (the same function of the same
// inputs, options, layouts and edge-case rules: any PairKernel, a constant, per-head or
// per-query bandwidth, a relative-bias table, the box mask and a key mask) computed the
// way Attention computes standard attention: per block of query rows, one product of the
// queries with the keys the mask leaves visible, the kernel's log-scores evaluated in
// place from those dot products (and the squared distances ‖q‖² + ‖k‖² − 2q·k), the
// masked normalisation, and one product with the values. The N·Tq·Tk weights and dot
// products are kept for the backward pass, which makes it faster than TiledLocalMean's
// recomputation at short and moderate lengths, at O(N·Tq·Tk) memory; LocalMeanWeights
// reads its weights (undropped). Gradients flow to q, k, v, the bandwidth node and the
// bias table. With opt.Dropout p > 0, in training, it drops its weights as
// AttentionDropout does (the same rule and mask), still in one op.
func (g *Graph) KernelAttention(kern PairKernel, q, k, v *Node, opt TiledOptions) *Node {
	spec, inputs, ok := g.pairInputs("KernelAttention", kern, q, k, v, opt)
	if !ok {
		return nil
	}
	ka := &kernelAttention{pairSpec: spec, keyMask: opt.KeyMask}
	if opt.Dropout == 0 || !g.Training() {
		return g.applyFused(ka, inputs...)
	}
	if g.rng == nil {
		return g.failf("KernelAttention: Dropout = %g, but the graph has no random generator", opt.Dropout)
	}
	g.usesRNG = true
	ka.drop = &fusedDrop{p: opt.Dropout, rng: g.rng}
	return g.applyFused(&kernelAttentionDropout{ka}, inputs...)
}

// DirectPairKernel is a PairKernel that also gives its values K = exp(score) directly,
// where they cost less than their logarithms (the compact kernels and Cauchy's, whose
// log-scores take a log1p per pair). KernelAttention then normalises the values of each
// query's visible keys by their sum instead of taking a softmax of the scores: the same
// weights, without a log or an exp per pair.
type DirectPairKernel interface {
	PairKernel
	// PairValues sets k[j] = K of pair j (≥ 0, and at most 1 so that sums stay finite),
	// exp of what PairScores gives, 0 outside the support; slices as PairScores's.
	PairValues(k, dot, d2 []float64, h float64)
}

type kernelAttention struct {
	pairSpec
	keyMask *Node      // the key mask input, for LocalMeanWeights
	drop    *fusedDrop // with Dropout, in training; nil: none
	// The (undropped) weights [N, Tq, Tk] of the last forward pass and, when the kernel reads them,
	// the dot products q·k (on rows32, the terms the kernel reads: the dot products or
	// the squared distances); only the key blocks that keyRange leaves visible are
	// written.
	p32, dots32 []float32
	p64, dots64 []float64
	// norms holds, per problem, the squared norms ‖q_t‖² (Tq) and ‖k_s‖² (Tk) of the last
	// forward pass when the kernel reads squared distances (on rows64); the backward pass
	// reuses them.
	norms []float64
	// mixShift and mixInv hold, per problem and query, a mixture's shift and factor on
	// rowsMix32, and mixNorms per problem its squared norms, for the backward pass.
	mixShift, mixInv []float64
	mixNorms         []float32
	mixRatExp        []float32 // [N·Tq] exp(−shift) per query, for a rational component
	// Gradients of every input computed ahead by the first backward call of a pass
	// (gradGen == gen), which wrote its own input's (gradAt) into its dst.
	grads                []*tensor.Dense
	gen, gradGen, gradAt int
}

func (k *kernelAttention) opName() string    { return "KernelAttention" }
func (k *kernelAttention) hashAttrs() string { return k.attrs() }

// resized returns x if it has length n, else a new zero slice of length n.
func resized[T float](x []T, n int) []T {
	if len(x) != n {
		return make([]T, n)
	}
	return x
}

// rowsOf32 returns the float32 row evaluator of each worker: rows32 for a PairKernel32,
// rowsMix32 for a MixturePairKernel32 whose components have float32 rows, else rows64.
func (k *kernelAttention) rowsOf32(d tiledDims, acc *pairAcc) func() pairRows[float32] {
	if k.mix32 != nil {
		return func() pairRows[float32] {
			return newRowsMix32(&k.pairSpec, d, acc, k.mixShift, k.mixInv, k.mixNorms, k.mixRatExp)
		}
	}
	if k.k32 != nil {
		return func() pairRows[float32] { return newRows32(k, d, acc) }
	}
	return func() pairRows[float32] { return newRows64[float32](k, d, acc) }
}

func (k *kernelAttention) forward(in []*tensor.Dense, out *tensor.Dense) error {
	d := k.dims(in)
	n := d.n * d.tq * d.tk
	dots := k.useDot || k.useDist
	k.gen++
	if k.drop != nil {
		k.drop.draw()
	}
	switch in[0].Dtype() {
	case Float32:
		k.p32 = resized(k.p32, n)
		if dots {
			k.dots32 = resized(k.dots32, n)
		}
		if k.useDist && k.k32 == nil && k.mix32 == nil {
			k.norms = resized(k.norms, d.n*(d.tq+d.tk))
		}
		if k.mix32 != nil {
			k.mixShift, k.mixInv = resized(k.mixShift, d.n*d.tq), resized(k.mixInv, d.n*d.tq)
			k.mixRatExp = resized(k.mixRatExp, d.n*d.tq)
			if k.useDist {
				k.mixNorms = resized(k.mixNorms, d.n*(d.tq+d.tk))
			}
		}
		kattnForward(k, d, gemm.Sgemm, tiledInputs[float32](&k.pairSpec, in), k.p32, k.dots32, out.Float32s(), k.rowsOf32(d, nil))
	case Float64:
		k.p64 = resized(k.p64, n)
		if dots {
			k.dots64 = resized(k.dots64, n)
		}
		if k.useDist {
			k.norms = resized(k.norms, d.n*(d.tq+d.tk))
		}
		kattnForward(k, d, gemm.Dgemm, tiledInputs[float64](&k.pairSpec, in), k.p64, k.dots64, out.Float64s(),
			func() pairRows[float64] { return newRows64[float64](k, d, nil) })
	}
	return nil
}

// kattnForward writes the weights into p (and the dot products into dots, when the
// kernel reads them) and the local means into out, each worker's rows by its own
// evaluator from rows.
func kattnForward[T float](k *kernelAttention, d tiledDims, mm gemmFunc[T], a tiledArgs[T], p, dots, out []T, rows func() pairRows[T]) {
	needQK := k.useDot || k.useDist
	parallelFor(d.n, d.tq*d.tk*(d.d+d.dv+8), func(plo, phi int) {
		rw := rows()
		bw, byBlock := rw.(blockRows[T])
		ldt := headStride(d.tk)
		var kt *[]T // the problem's Kᵀ, [d, ldt]: the dot products read it in place
		if needQK {
			kt = getScratch[T](d.d * ldt)
			defer putScratch(kt)
		}
		var dw *[]T // the dropped weights of a block, with dropout
		if k.drop != nil {
			dw = getScratch[T](rowBlock * d.tk)
			defer putScratch(dw)
		}
		var pr problem[T] // one per worker: the row evaluators take its address
		for pi := plo; pi < phi; pi++ {
			pr = tiledProblem(&k.pairSpec, d, a, pi)
			if needQK {
				transposeHead(*kt, pr.k, d.tk, d.d, d.lq, ldt, 1)
			}
			rw.begin(&pr, pi)
			op := out[d.off(pi, d.tq, d.dv, d.lv):]
			ph := p[pi*d.tq*d.tk : (pi+1)*d.tq*d.tk]
			var dh []T
			if needQK {
				dh = dots[pi*d.tq*d.tk : (pi+1)*d.tq*d.tk]
			}
			for r0 := 0; r0 < d.tq; r0 += rowBlock {
				r1 := min(r0+rowBlock, d.tq)
				clo, chi := keyRange(k.mask, r0, r1, d.tk)
				if chi <= clo { // no query of the block sees a key
					for t := r0; t < r1; t++ {
						clear(op[t*d.lv : t*d.lv+d.dv])
					}
					continue
				}
				if needQK {
					mm(false, false, r1-r0, chi-clo, d.d, 1, pr.q[r0*d.lq:], d.lq, (*kt)[clo:], ldt, 0, dh[r0*d.tk+clo:], d.tk)
				}
				if byBlock {
					bw.weightsBlock(&pr, ph, dh, r0, r1, clo, chi)
				} else {
					weightRows(rw, k.mask, &pr, ph, dh, d.tk, r0, r1, clo, chi)
				}
				if dw != nil {
					dropBlock(k.drop, *dw, ph, pi*d.tq*d.tk, d.tk, r0, r1, clo, chi)
					mm(false, false, r1-r0, d.dv, chi-clo, 1, *dw, chi-clo, pr.v[clo*d.lv:], d.lv, 0, op[r0*d.lv:], d.lv)
					continue
				}
				mm(false, false, r1-r0, d.dv, chi-clo, 1, ph[r0*d.tk+clo:], d.tk, pr.v[clo*d.lv:], d.lv, 0, op[r0*d.lv:], d.lv)
			}
		}
	})
}

// stateBufs: the gradients of the inputs computed together by the first backward call.
func (k *kernelAttention) stateBufs(in []tensor.Shape) []stateBuf { return inputGradBufs(nil, in) }

// useState takes the plan's buffers; gradBuffers makes those it left out.
func (k *kernelAttention) useState(bufs []*tensor.Dense) { k.grads = bufs }

func (k *kernelAttention) backward(wrt int, in []*tensor.Dense, out, gout, dst *tensor.Dense) error {
	if k.gradGen == k.gen && k.gradAt != wrt && len(k.grads) == len(in) {
		copyGrad(dst, k.grads[wrt])
		return nil
	}
	// The first call of a pass computes every input's gradient, its own into dst and the
	// others into k.grads for the calls that follow.
	k.grads = gradBuffers(k.grads, in)
	bufs := append([]*tensor.Dense(nil), k.grads...)
	bufs[wrt] = dst
	d := k.dims(in)
	switch in[0].Dtype() {
	case Float32:
		gr := tiledInputs[float32](&k.pairSpec, bufs)
		acc := k.newAcc(d, gr.h != nil, gr.bias != nil, gr.theta != nil)
		kattnBackward(k, d, gemm.Sgemm, tiledInputs[float32](&k.pairSpec, in), k.p32, k.dots32,
			out.Float32s(), gout.Float32s(), gr, acc, k.rowsOf32(d, acc))
	case Float64:
		gr := tiledInputs[float64](&k.pairSpec, bufs)
		acc := k.newAcc(d, gr.h != nil, gr.bias != nil, gr.theta != nil)
		kattnBackward(k, d, gemm.Dgemm, tiledInputs[float64](&k.pairSpec, in), k.p64, k.dots64,
			out.Float64s(), gout.Float64s(), gr, acc, func() pairRows[float64] { return newRows64[float64](k, d, acc) })
	}
	k.gradGen, k.gradAt = k.gen, wrt
	return nil
}

// newAcc returns the parameter gradients' parts of a backward pass, for the inputs
// present: the bandwidth, the bias table, the kernel's parameters.
func (k *kernelAttention) newAcc(d tiledDims, h, bias, theta bool) *pairAcc {
	var acc pairAcc
	if h {
		acc.hRows = make([]float64, d.n*d.tq)
	}
	if bias {
		acc.biasParts = make([]float64, d.n*(2*k.biasM+1))
	}
	if theta {
		acc.thetaParts = make([]float64, d.n*k.nTheta)
	}
	return &acc
}

// kattnBackward computes every input's gradient into gr (the key mask's slot stays
// unused) from the kept weights w and dot products: per block, dv += wᵀ·dm, the score
// gradients gs = w ⊙ (dm·vᵀ − dm·m) (THEORY.md §8), passed through the kernel (each
// worker's evaluator from rows) to the coefficients C of the dot products, then
// dq += C·k and dk += Cᵀ·q, and the squared norms' share 2(Σ_s ∂L/∂d²_ts) q_t and
// 2(Σ_t ∂L/∂d²_ts) k_s; the parameters' parts go to acc.
func kattnBackward[T float](k *kernelAttention, d tiledDims, mm gemmFunc[T], a tiledArgs[T], p, dots, out, dm []T, gr tiledArgs[T],
	acc *pairAcc, rows func() pairRows[T]) {
	clear(gr.q)
	clear(gr.k)
	clear(gr.v)
	needQK := k.useDot || k.useDist
	needScores := needQK || acc.hRows != nil || acc.biasParts != nil || acc.thetaParts != nil
	parallelFor(d.n, d.tq*d.tk*(2*d.d+2*d.dv+8), func(plo, phi int) {
		rw := rows()
		bw, byBlock := rw.(blockRows[T])
		c := make([]T, rowBlock*d.tk)
		rs, deltas := make([]float64, rowBlock), make([]float64, rowBlock)
		ldt := headStride(d.tk)
		var vt *[]T // the problem's Vᵀ, [dv, ldt]: dm·vᵀ reads it in place
		if needScores {
			vt = getScratch[T](d.dv * ldt)
			defer putScratch(vt)
		}
		var dw *[]T // the dropped weights of a block, with dropout
		if k.drop != nil {
			dw = getScratch[T](rowBlock * d.tk)
			defer putScratch(dw)
		}
		var pr problem[T] // one per worker: the row evaluators take its address
		for pi := plo; pi < phi; pi++ {
			pr = tiledProblem(&k.pairSpec, d, a, pi)
			if needScores {
				transposeHead(*vt, pr.v, d.tk, d.dv, d.lv, ldt, 1)
			}
			op := out[d.off(pi, d.tq, d.dv, d.lv):]
			dmp := dm[d.off(pi, d.tq, d.dv, d.lv):]
			dq := gr.q[d.off(pi, d.tq, d.d, d.lq):]
			dk := gr.k[d.off(pi, d.tk, d.d, d.lq):]
			dv := gr.v[d.off(pi, d.tk, d.dv, d.lv):]
			ph := p[pi*d.tq*d.tk : (pi+1)*d.tq*d.tk]
			var dh []T
			if needQK {
				dh = dots[pi*d.tq*d.tk : (pi+1)*d.tq*d.tk]
			}
			rw.beginGrads(&pr, pi)
			for r0 := 0; r0 < d.tq; r0 += rowBlock {
				r1 := min(r0+rowBlock, d.tq)
				rb := r1 - r0
				clo, chi := keyRange(k.mask, r0, r1, d.tk)
				if chi <= clo {
					continue
				}
				w := chi - clo
				if needQK { // the block's kept dot products, read cold by coefs: fetched during the gemms
					prefetchRows(dh[r0*d.tk+clo:], rb, w, d.tk)
				}
				if needScores { // the block's local means, read cold for δ
					prefetchRows(op[r0*d.lv:], rb, d.dv, d.lv)
				}
				if dw != nil {
					// With dropout (fusedDrop): dm·vᵀ ⊙ keep/(1−p), and dV += Dᵀ·dm.
					if needScores {
						mm(false, false, rb, w, d.dv, 1, dmp[r0*d.lv:], d.lv, (*vt)[clo:], ldt, 0, c, w)
						dropGradBlock(k.drop, *dw, c, ph, pi*d.tq*d.tk, d.tk, r0, r1, clo, chi)
					} else {
						dropBlock(k.drop, *dw, ph, pi*d.tq*d.tk, d.tk, r0, r1, clo, chi)
					}
					mm(true, false, w, d.dv, rb, 1, *dw, w, dmp[r0*d.lv:], d.lv, 1, dv[clo*d.lv:], d.lv)
					if !needScores {
						continue
					}
				} else {
					// dV[clo:chi] += W[r0:r1, clo:chi]ᵀ·dm[r0:r1]
					mm(true, false, w, d.dv, rb, 1, ph[r0*d.tk+clo:], d.tk, dmp[r0*d.lv:], d.lv, 1, dv[clo*d.lv:], d.lv)
					if !needScores {
						continue
					}
					mm(false, false, rb, w, d.dv, 1, dmp[r0*d.lv:], d.lv, (*vt)[clo:], ldt, 0, c, w) // dm·vᵀ
				}
				// Each row's δ, and 0 outside its visible keys.
				for i := range rb {
					t := r0 + i
					crow := c[i*w : (i+1)*w]
					lo, hi := visibleKeys(k.mask, t, d.tk, clo, chi)
					if hi <= lo {
						clear(crow)
						continue
					}
					clear(crow[:lo-clo])
					clear(crow[hi-clo:])
					deltas[i] = dot64(dmp[t*d.lv:t*d.lv+d.dv], op[t*d.lv:t*d.lv+d.dv])
				}
				if byBlock {
					bw.coefsBlock(&pr, c, ph, dh, deltas, rs, r0, r1, clo, chi, pi)
				} else {
					coefRows(rw, k.mask, &pr, c, ph, dh, deltas, rs, d.tk, r0, r1, clo, chi, pi)
				}
				if !needQK {
					continue
				}
				// dQ[r0:r1] += C·K[clo:chi], dK[clo:chi] += Cᵀ·Q[r0:r1]
				mm(false, false, rb, d.d, w, 1, c, w, pr.k[clo*d.lq:], d.lq, 1, dq[r0*d.lq:], d.lq)
				mm(true, false, w, d.d, rb, 1, c, w, pr.q[r0*d.lq:], d.lq, 1, dk[clo*d.lq:], d.lq)
				if k.useDist {
					addNormGrads(dq, pr.q, rs[:rb], r0, d.lq, d.d)
				}
			}
			rw.endGrads(&pr, dk)
		}
	})
	pairParamGrads(&k.pairSpec, d.n, d.tq, acc.hRows, acc.biasParts, acc.thetaParts, gr)
}

// prefetchRows asks the CPU to fetch rows of width w > 0 and stride ld from x (float32
// only: the float64 runs are the reference, not tuned).
func prefetchRows[T float](x []T, rows, w, ld int) {
	for i := range rows {
		if p, ok := any(&x[i*ld]).(*float32); ok {
			vmath.Prefetch(p, w)
		}
	}
}
