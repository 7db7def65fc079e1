package methods

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// LLEOptions configures LocallyLinearEmbedding.
type LLEOptions struct {
	// Neighbors is the number of neighbours that reconstruct each point; 0 means 10.
	Neighbors int
	// Components is the embedding dimension; 0 means 2.
	Components int
	// Reg regularises the local Gram matrix C as C + Reg·trace(C)·I
	// (scikit-learn's convention); 0 means 1e-3.
	Reg float64
}

// ReconstructionWeights returns the locally linear reconstruction weights of
// points (n×d): for each point i, its k nearest other points nbrs[i] (nearest
// first) and weights w[i] (same order) that sum to 1 and minimise
// ‖x_i − Σ_j w_ij x_j‖², found by solving (C + reg·trace(C)·I) w = 1 with C
// the local Gram matrix of the neighbours centred on x_i, then normalising.
// Row i of the hollow weight matrix W has w[i] at columns nbrs[i].
func ReconstructionWeights(points [][]float64, k int, reg float64) (nbrs [][]int, w [][]float64, err error) {
	d, err := checkPoints("points", points)
	if err != nil {
		return nil, nil, fmt.Errorf("lle weights: %w", err)
	}
	n := len(points)
	if k < 1 || k >= n {
		return nil, nil, fmt.Errorf("lle weights: need 1 <= neighbours < %d (number of points), got %d", n, k)
	}
	if !(reg > 0) || math.IsInf(reg, 1) {
		return nil, nil, fmt.Errorf("lle weights: reg must be a positive finite number, got %v", reg)
	}
	idx, dist := make([]int, n), make([]float64, n)
	z := mat.NewDense(k, d, nil)
	c := mat.NewSymDense(k, nil)
	ones := mat.NewVecDense(k, nil)
	for j := 0; j < k; j++ {
		ones.SetVec(j, 1)
	}
	var sol mat.VecDense
	var chol mat.Cholesky
	nbrs, w = make([][]int, n), make([][]float64, n)
	for i, p := range points {
		nb := append([]int(nil), nearest(points, p, k, i, idx, dist)...)
		for r, j := range nb {
			for col := 0; col < d; col++ {
				z.Set(r, col, points[j][col]-p[col])
			}
		}
		c.SymOuterK(1, z)
		tr := mat.Trace(c)
		r := reg
		if tr > 0 {
			r *= tr
		}
		for j := 0; j < k; j++ {
			c.SetSym(j, j, c.At(j, j)+r)
		}
		if !chol.Factorize(c) {
			return nil, nil, fmt.Errorf("lle weights: point %d: local Gram matrix is not positive definite; increase Reg", i)
		}
		if err := chol.SolveVecTo(&sol, ones); err != nil {
			return nil, nil, fmt.Errorf("lle weights: point %d: %w", i, err)
		}
		wi := make([]float64, k)
		var sum float64
		for j := range wi {
			wi[j] = sol.AtVec(j)
			sum += wi[j]
		}
		for j := range wi {
			wi[j] /= sum
		}
		nbrs[i], w[i] = nb, wi
	}
	return nbrs, w, nil
}

// LocallyLinearEmbedding embeds points (n×d) in opts.Components dimensions
// by locally linear embedding: it learns the hollow, row-normalised
// reconstruction weights W (ReconstructionWeights), then returns the
// eigenvectors of M = (I − W)ᵀ(I − W) with the smallest eigenvalues,
// skipping the constant one (eigenvalue 0), as the columns of the n×
// Components result. Each column has unit norm; its sign is arbitrary.
// It needs n > max(Neighbors, Components+1) and uses a dense n×n
// eigendecomposition (O(n³) time).
func LocallyLinearEmbedding(points [][]float64, opts LLEOptions) ([][]float64, error) {
	k, dims, reg := opts.Neighbors, opts.Components, opts.Reg
	if k == 0 {
		k = 10
	}
	if dims == 0 {
		dims = 2
	}
	if reg == 0 {
		reg = 1e-3
	}
	if dims < 1 || dims+1 > len(points) {
		return nil, fmt.Errorf("lle: need 1 <= Components < %d (number of points), got %d", len(points), dims)
	}
	nbrs, w, err := ReconstructionWeights(points, k, reg)
	if err != nil {
		return nil, err
	}
	n := len(points)
	m := mat.NewSymDense(n, nil)
	// M = Σ_i r_iᵀ r_i with r_i = e_i − W_i, a sparse row with k+1 entries.
	ridx := make([]int, k+1)
	rval := make([]float64, k+1)
	for i := range points {
		ridx[0], rval[0] = i, 1
		for j, nb := range nbrs[i] {
			ridx[j+1], rval[j+1] = nb, -w[i][j]
		}
		for a := range ridx {
			for b := range ridx {
				if ridx[a] <= ridx[b] {
					m.SetSym(ridx[a], ridx[b], m.At(ridx[a], ridx[b])+rval[a]*rval[b])
				}
			}
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(m, true) {
		return nil, errors.New("lle: eigendecomposition failed")
	}
	var vecs mat.Dense
	eig.VectorsTo(&vecs) // columns, eigenvalues ascending
	out := make([][]float64, n)
	for i := range out {
		out[i] = make([]float64, dims)
		for c := 0; c < dims; c++ {
			out[i][c] = vecs.At(i, c+1)
		}
	}
	return out, nil
}
