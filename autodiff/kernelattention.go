package autodiff

import (
	"math"

	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff/internal/gemm"
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
// reads its weights. Gradients flow to q, k, v, the bandwidth node and the bias table.
func (g *Graph) KernelAttention(kern PairKernel, q, k, v *Node, opt TiledOptions) *Node {
	spec, inputs, ok := g.pairInputs("KernelAttention", kern, q, k, v, opt)
	if !ok {
		return nil
	}
	return g.applyFused(&kernelAttention{pairSpec: spec, keyMask: opt.KeyMask}, inputs...)
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
	keyMask *Node // the key mask input, for LocalMeanWeights
	// The weights [N, Tq, Tk] of the last forward pass and, when the kernel reads them,
	// the dot products q·k; only the key blocks that keyRange leaves visible are written.
	p32, dots32 []float32
	p64, dots64 []float64
	// norms holds, per problem, the squared norms ‖q_t‖² (Tq) and ‖k_s‖² (Tk) of the last
	// forward pass when the kernel reads squared distances; the backward pass reuses them.
	norms []float64
	// Gradients of every input, computed together by the first backward call of a pass.
	grads        []*tensor.Dense
	gen, gradGen int
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

func (k *kernelAttention) forward(in []*tensor.Dense, out *tensor.Dense) error {
	d := k.dims(in)
	n := d.n * d.tq * d.tk
	dots := k.useDot || k.useDist
	k.gen++
	if k.useDist {
		k.norms = resized(k.norms, d.n*(d.tq+d.tk))
	}
	switch in[0].Dtype() {
	case Float32:
		k.p32 = resized(k.p32, n)
		if dots {
			k.dots32 = resized(k.dots32, n)
		}
		kattnForward(k, d, gemm.Sgemm, tiledInputs[float32](&k.pairSpec, in), k.p32, k.dots32, out.Float32s())
	case Float64:
		k.p64 = resized(k.p64, n)
		if dots {
			k.dots64 = resized(k.dots64, n)
		}
		kattnForward(k, d, gemm.Dgemm, tiledInputs[float64](&k.pairSpec, in), k.p64, k.dots64, out.Float64s())
	}
	return nil
}

// kattnForward writes the weights into p (and the dot products into dots, when the
// kernel reads them) and the local means into out.
func kattnForward[T float](k *kernelAttention, d tiledDims, mm gemmFunc[T], a tiledArgs[T], p, dots, out []T) {
	needQK := k.useDot || k.useDist
	direct, _ := k.kern.(DirectPairKernel)
	if k.pk != nil { // its values depend on θ: the scores' path
		direct = nil
	}
	parallelFor(d.n, d.tq*d.tk*(d.d+d.dv+8), func(plo, phi int) {
		sc := newPairScratch(d.tk, d.tq, d.tk)
		var eb []float64 // exp(bias − max bias), for a direct kernel
		ldt := headStride(d.tk)
		var kt *[]T // the problem's Kᵀ, [d, ldt]: the dot products read it in place
		if needQK {
			kt = getScratch[T](d.d * ldt)
			defer putScratch(kt)
		}
		for pi := plo; pi < phi; pi++ {
			pr := tiledProblem(&k.pairSpec, d, a, pi)
			if needQK {
				transposeHead(*kt, pr.k, d.tk, d.d, d.lq, ldt, 1)
			}
			if direct != nil && pr.bias != nil {
				eb = expBias(pr.bias, eb)
			}
			op := out[d.off(pi, d.tq, d.dv, d.lv):]
			ph := p[pi*d.tq*d.tk : (pi+1)*d.tq*d.tk]
			var dh []T
			if needQK {
				dh = dots[pi*d.tq*d.tk : (pi+1)*d.tq*d.tk]
			}
			if problemNorms(&k.pairSpec, d, &pr, &sc) {
				nb := k.norms[pi*(d.tq+d.tk) : (pi+1)*(d.tq+d.tk)]
				copy(nb, sc.qq[:d.tq])
				copy(nb[d.tq:], sc.kk[:d.tk])
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
				for t := r0; t < r1; t++ {
					row := ph[t*d.tk : (t+1)*d.tk]
					lo, hi, _ := k.mask.visible(t, d.tk)
					lo, hi = max(lo, clo), min(hi, chi)
					var drow []T
					if needQK && hi > lo {
						drow = dh[t*d.tk+lo : t*d.tk+hi]
					}
					if direct != nil {
						directWeights(k, direct, &pr, &sc, eb, drow, row, t, clo, chi)
						continue
					}
					if hi > lo {
						for j, x := range pairRowScores(&k.pairSpec, &pr, &sc, drow, t, lo, hi) {
							row[lo+j] = T(x)
						}
					}
					softmaxVisible(row, row, pr.km, k.mask, t, clo, chi)
				}
				mm(false, false, r1-r0, d.dv, chi-clo, 1, ph[r0*d.tk+clo:], d.tk, pr.v[clo*d.lv:], d.lv, 0, op[r0*d.lv:], d.lv)
			}
		}
	})
}

// expBias returns exp(b − max b) for the entries of a bias row, in buf's storage.
func expBias[T float](bias []T, buf []float64) []float64 {
	if cap(buf) < len(bias) {
		buf = make([]float64, len(bias))
	}
	buf = buf[:len(bias)]
	mx := math.Inf(-1)
	for _, b := range bias {
		mx = max(mx, float64(b))
	}
	for i, b := range bias {
		buf[i] = math.Exp(float64(b) - mx)
	}
	return buf
}

// directWeights is softmaxVisible for a DirectPairKernel: it writes into row[clo:chi] the
// weights of query t, K_ts·exp(bias_ts) normalised over the visible keys, 0 for the
// others, with softmaxVisible's rules (a row that sees nothing or only zeros is 0, a NaN
// makes the row NaN, a float32 weight below the smallest normal float32 is 0). eb is
// exp(bias − max bias) of the problem's bias row, or unused without a bias.
func directWeights[T float](k *kernelAttention, kern DirectPairKernel, pr *problem[T], sc *pairScratch, eb []float64, dots, row []T, t, clo, chi int) {
	lo, hi, self := k.mask.visible(t, len(row))
	lo, hi = max(lo, clo), min(hi, chi)
	if hi <= lo {
		clear(row[clo:chi])
		return
	}
	clear(row[clo:lo])
	clear(row[hi:chi])
	dot, d2 := pairRowTerms(&k.pairSpec, sc, dots, t, lo, hi)
	kv := sc.s[:hi-lo]
	kern.PairValues(kv, dot, d2, pr.bandwidth(t))
	if pr.bias != nil {
		j0, j1 := k.biasSpan(t, lo, len(kv))
		m := k.biasM
		for j := range j0 {
			kv[j] *= eb[0]
		}
		for j := j0; j < j1; j++ {
			kv[j] *= eb[lo+j-t-k.mask.Offset+m]
		}
		for j := j1; j < len(kv); j++ {
			kv[j] *= eb[2*m]
		}
	}
	if self >= lo && self < hi {
		kv[self-lo] = 0
	}
	if pr.km != nil {
		for j, x := range pr.km[lo:hi] {
			if x == 0 {
				kv[j] = 0
			}
		}
	}
	var s0, s1, s2, s3 float64 // four partial sums: one would wait for each addition
	j := 0
	for ; j+4 <= len(kv); j += 4 {
		s0 += kv[j]
		s1 += kv[j+1]
		s2 += kv[j+2]
		s3 += kv[j+3]
	}
	for ; j < len(kv); j++ {
		s0 += kv[j]
	}
	sum := (s0 + s1) + (s2 + s3)
	w := row[lo:hi]
	switch {
	case math.IsNaN(sum) || math.IsInf(sum, 0):
		for j := range w {
			w[j] = T(math.NaN())
		}
		return
	case sum == 0:
		clear(w)
		return
	}
	inv := 1 / sum
	var tiny float64 // the smallest normal of T: smaller weights are 0, as softmaxVisible's
	if _, f32 := any(w).([]float32); f32 {
		tiny = 0x1p-126
	}
	for j, x := range kv {
		x *= inv
		if x < tiny {
			x = 0
		}
		w[j] = T(x)
	}
}

func (k *kernelAttention) backward(wrt int, in []*tensor.Dense, out, gout, dst *tensor.Dense) error {
	if k.gradGen != k.gen || len(k.grads) != len(in) {
		k.grads = gradBuffers(k.grads, in)
		d := k.dims(in)
		switch in[0].Dtype() {
		case Float32:
			kattnBackward(k, d, gemm.Sgemm, tiledInputs[float32](&k.pairSpec, in), k.p32, k.dots32,
				out.Float32s(), gout.Float32s(), tiledInputs[float32](&k.pairSpec, k.grads))
		case Float64:
			kattnBackward(k, d, gemm.Dgemm, tiledInputs[float64](&k.pairSpec, in), k.p64, k.dots64,
				out.Float64s(), gout.Float64s(), tiledInputs[float64](&k.pairSpec, k.grads))
		}
		k.gradGen = k.gen
	}
	copyGrad(dst, k.grads[wrt])
	return nil
}

// kattnBackward computes every input's gradient into gr (the key mask's slot stays
// unused) from the kept weights w and dot products: per block, dv += wᵀ·dm, the score
// gradients gs = w ⊙ (dm·vᵀ − dm·m) (THEORY.md §8), passed through the kernel (PairGrads)
// to the coefficients C = ∂L/∂dot − 2∂L/∂d², then dq += C·k and dk += Cᵀ·q, and the
// squared norms' share 2(Σ_s ∂L/∂d²_ts) q_t and 2(Σ_t ∂L/∂d²_ts) k_s.
func kattnBackward[T float](k *kernelAttention, d tiledDims, mm gemmFunc[T], a tiledArgs[T], p, dots, out, dm []T, gr tiledArgs[T]) {
	clear(gr.q)
	clear(gr.k)
	clear(gr.v)
	var hRows []float64 // per (problem, row) bandwidth gradients
	if gr.h != nil {
		hRows = make([]float64, d.n*d.tq)
	}
	bw := 2*k.biasM + 1
	var biasParts []float64 // per problem, [2M+1]
	if gr.bias != nil {
		biasParts = make([]float64, d.n*bw)
	}
	var thetaParts []float64 // per problem, [nTheta]
	if gr.theta != nil {
		thetaParts = make([]float64, d.n*k.nTheta)
	}
	needQK := k.useDot || k.useDist
	needScores := needQK || hRows != nil || biasParts != nil || thetaParts != nil
	parallelFor(d.n, d.tq*d.tk*(2*d.d+2*d.dv+8), func(plo, phi int) {
		sc := newPairScratch(d.tk, d.tq, d.tk)
		c := make([]T, rowBlock*d.tk)
		rs := make([]float64, rowBlock)
		cs := make([]float64, d.tk)
		ldt := headStride(d.tk)
		var vt *[]T // the problem's Vᵀ, [dv, ldt]: dm·vᵀ reads it in place
		if needScores {
			vt = getScratch[T](d.dv * ldt)
			defer putScratch(vt)
		}
		for pi := plo; pi < phi; pi++ {
			pr := tiledProblem(&k.pairSpec, d, a, pi)
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
			if k.useDist { // the forward pass's squared norms
				nb := k.norms[pi*(d.tq+d.tk) : (pi+1)*(d.tq+d.tk)]
				sc.qq, sc.kk = nb[:d.tq], nb[d.tq:]
				clear(cs)
			}
			for r0 := 0; r0 < d.tq; r0 += rowBlock {
				r1 := min(r0+rowBlock, d.tq)
				rb := r1 - r0
				clo, chi := keyRange(k.mask, r0, r1, d.tk)
				if chi <= clo {
					continue
				}
				w := chi - clo
				// dV[clo:chi] += W[r0:r1, clo:chi]ᵀ·dm[r0:r1]
				mm(true, false, w, d.dv, rb, 1, ph[r0*d.tk+clo:], d.tk, dmp[r0*d.lv:], d.lv, 1, dv[clo*d.lv:], d.lv)
				if !needScores {
					continue
				}
				mm(false, false, rb, w, d.dv, 1, dmp[r0*d.lv:], d.lv, (*vt)[clo:], ldt, 0, c, w) // dm·vᵀ
				for i := range rb {
					t := r0 + i
					crow := c[i*w : (i+1)*w]
					rs[i] = 0
					lo, hi, _ := k.mask.visible(t, d.tk)
					lo, hi = max(lo, clo), min(hi, chi)
					if hi <= lo {
						clear(crow)
						continue
					}
					clear(crow[:lo-clo])
					clear(crow[hi-clo:])
					cv := crow[lo-clo : hi-clo]
					delta := dot64(dmp[t*d.lv:t*d.lv+d.dv], op[t*d.lv:t*d.lv+d.dv])
					gs := sc.gs[:hi-lo]
					nz := false
					for j, x := range ph[t*d.tk+lo : t*d.tk+hi] {
						gs[j] = float64(x) * (float64(cv[j]) - delta)
						nz = nz || gs[j] != 0
					}
					if !nz {
						clear(cv)
						continue
					}
					if biasParts != nil {
						k.addBiasGrads(biasParts[pi*bw:(pi+1)*bw], gs, t, lo)
					}
					var drow []T
					if needQK {
						drow = dh[t*d.tk+lo : t*d.tk+hi]
					}
					r := pairRowCoefs(&k.pairSpec, &sc, &pr, gs, drow, cv, t, lo, hi, pi, d.tq, hRows, thetaParts, cs)
					if k.useDist {
						rs[i] = r
					}
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
			if k.useDist {
				addNormGrads(dk, pr.k, cs[:d.tk], 0, d.lq, d.d)
			}
		}
	})
	pairParamGrads(&k.pairSpec, d.n, d.tq, hRows, biasParts, thetaParts, gr)
}
