package methods

import (
	"errors"
	"fmt"
	"math"

	"github.com/locusml/locus/layers"
	"gonum.org/v1/gonum/mat"
)

// LocalLinearOptions configures local linear regression.
type LocalLinearOptions struct {
	// Kernel is the localization kernel; nil means layers.Gaussian{}.
	Kernel layers.Kernel
	// Bandwidth h > 0; 0 means DefaultBandwidth(x).
	Bandwidth float64
	// Ridge is λ >= 0 in (X̄ᵀWX̄ + λI)θ = X̄ᵀWy. The default 0 is plain
	// weighted least squares, which fails with an error where the local
	// system is singular (too few points with non-zero weight).
	Ridge float64
}

// LocalLinearFit returns the local linear model at query, the (d+1)×m
// matrix
//
//	θ* = (X̄ᵀWX̄ + λI)⁻¹ X̄ᵀW y,    X̄ = [x, 1],
//
// whose first d rows are the slopes and last row the intercept, so the
// prediction is [query, 1]·θ*. W = diag(w) holds the kernel weights
// K(query, x_i) normalised to sum to 1 (our choice: it makes λ independent
// of the kernel's scale and avoids underflow). x is n×d, y is n×m.
func LocalLinearFit(x, y [][]float64, query []float64, opts LocalLinearOptions) (*mat.Dense, error) {
	d, _, err := checkPair(x, y)
	if err != nil {
		return nil, fmt.Errorf("local linear: %w", err)
	}
	if err := checkQueries([][]float64{query}, d); err != nil {
		return nil, fmt.Errorf("local linear: %w", err)
	}
	k, h, err := opts.resolve(x)
	if err != nil {
		return nil, fmt.Errorf("local linear: %w", err)
	}
	theta, err := localLinearFit(k, h, opts.Ridge, x, y, query, make([]float64, len(x)))
	if err != nil {
		return nil, fmt.Errorf("local linear: %w", err)
	}
	return theta, nil
}

func (o LocalLinearOptions) resolve(x [][]float64) (layers.Kernel, float64, error) {
	if o.Ridge < 0 || math.IsNaN(o.Ridge) || math.IsInf(o.Ridge, 0) {
		return nil, 0, fmt.Errorf("ridge must be a finite number >= 0, got %v", o.Ridge)
	}
	return LocalMeanOptions{Kernel: o.Kernel, Bandwidth: o.Bandwidth}.resolve(x)
}

func localLinearFit(k layers.Kernel, h, ridge float64, x, y [][]float64, q []float64, w []float64) (*mat.Dense, error) {
	d, m := len(x[0]), len(y[0])
	if err := normalizedWeights(k, h, q, x, w); err != nil {
		return nil, err
	}
	a := mat.NewSymDense(d+1, nil)
	b := mat.NewDense(d+1, m, nil)
	xbar := make([]float64, d+1)
	xbar[d] = 1
	for i, xi := range x {
		if w[i] == 0 {
			continue
		}
		copy(xbar, xi)
		for r := 0; r <= d; r++ {
			wr := w[i] * xbar[r]
			for c := r; c <= d; c++ {
				a.SetSym(r, c, a.At(r, c)+wr*xbar[c])
			}
			for c, yc := range y[i] {
				b.Set(r, c, b.At(r, c)+wr*yc)
			}
		}
	}
	for r := 0; r <= d; r++ {
		a.SetSym(r, r, a.At(r, r)+ridge)
	}
	var chol mat.Cholesky
	if !chol.Factorize(a) {
		return nil, errors.New("singular local system (too few points in the kernel's support; increase Ridge or Bandwidth)")
	}
	var theta mat.Dense
	if err := chol.SolveTo(&theta, b); err != nil {
		return nil, fmt.Errorf("local system: %w", err)
	}
	return &theta, nil
}

// LocalLinear returns the local linear regression prediction [q, 1]·θ*(q)
// at each query q (see LocalLinearFit), one row of length m per query.
// Unlike Nadaraya–Watson it reproduces linear functions exactly (with
// Ridge 0) and has no boundary bias; its equivalent weights can be negative.
// A query where every weight is zero is an error wrapping ErrZeroWeights.
func LocalLinear(x, y, queries [][]float64, opts LocalLinearOptions) ([][]float64, error) {
	d, m, err := checkPair(x, y)
	if err != nil {
		return nil, fmt.Errorf("local linear: %w", err)
	}
	if err := checkQueries(queries, d); err != nil {
		return nil, fmt.Errorf("local linear: %w", err)
	}
	k, h, err := opts.resolve(x)
	if err != nil {
		return nil, fmt.Errorf("local linear: %w", err)
	}
	w := make([]float64, len(x))
	out := make([][]float64, len(queries))
	for qi, q := range queries {
		theta, err := localLinearFit(k, h, opts.Ridge, x, y, q, w)
		if err != nil {
			return nil, fmt.Errorf("local linear: query %d: %w", qi, err)
		}
		out[qi] = make([]float64, m)
		for c := 0; c < m; c++ {
			v := theta.At(d, c)
			for r, qr := range q {
				v += qr * theta.At(r, c)
			}
			out[qi][c] = v
		}
	}
	return out, nil
}

// LossFunc returns the loss l(x, y; θ) of one example (x, y) and its
// gradient with respect to θ (a new slice of len(θ), or one the function
// reuses; LocalFit only reads it before the next call).
type LossFunc func(x, y, theta []float64) (loss float64, grad []float64)

// LocalFitOptions configures LocalFit.
type LocalFitOptions struct {
	// Kernel is the localization kernel; nil means layers.Gaussian{}.
	Kernel layers.Kernel
	// Bandwidth h > 0; 0 means DefaultBandwidth(x).
	Bandwidth float64
	// Init is the starting θ; its length is the number of parameters. Required.
	Init []float64
	// LearningRate is the gradient step size; 0 means 0.1.
	LearningRate float64
	// MaxIter bounds the number of gradient steps; 0 means 1000.
	MaxIter int
	// Tol stops the descent once ‖∇‖ <= Tol; 0 means 1e-8.
	Tol float64
}

// LocalFitResult is the local model LocalFit found.
type LocalFitResult struct {
	Theta      []float64 // θ*(query)
	Loss       float64   // Σ_i w_i l(x_i, y_i; θ*), w normalised to sum 1
	Iterations int       // gradient steps taken
	Converged  bool      // whether ‖∇‖ <= Tol was reached within MaxIter
}

// LocalFit applies the localization trick to any differentiable model: it
// minimises, by plain gradient descent from opts.Init,
//
//	Σ_i w_i l(x_i, y_i; θ),   w_i = K(query, x_i) / Σ_j K(query, x_j),
//
// and returns θ*(query). The weights are normalised (our choice) so that the
// learning rate does not depend on the kernel's scale. y may be nil for
// losses without targets; otherwise it has one row per row of x. With a
// constant model and squared loss the result is the Nadaraya–Watson
// estimate; with a linear model, local linear regression. Not converging
// within MaxIter is reported in the result, not as an error; a loss that
// becomes NaN or infinite (divergence) is an error.
func LocalFit(x, y [][]float64, query []float64, loss LossFunc, opts LocalFitOptions) (LocalFitResult, error) {
	d, err := checkPoints("x", x)
	if err != nil {
		return LocalFitResult{}, fmt.Errorf("local fit: %w", err)
	}
	if y != nil {
		if _, _, err := checkPair(x, y); err != nil {
			return LocalFitResult{}, fmt.Errorf("local fit: %w", err)
		}
	}
	if err := checkQueries([][]float64{query}, d); err != nil {
		return LocalFitResult{}, fmt.Errorf("local fit: %w", err)
	}
	if loss == nil || len(opts.Init) == 0 {
		return LocalFitResult{}, errors.New("local fit: need a loss function and a non-empty Init")
	}
	k, h, err := LocalMeanOptions{Kernel: opts.Kernel, Bandwidth: opts.Bandwidth}.resolve(x)
	if err != nil {
		return LocalFitResult{}, fmt.Errorf("local fit: %w", err)
	}
	lr, maxIter, tol := opts.LearningRate, opts.MaxIter, opts.Tol
	if lr == 0 {
		lr = 0.1
	}
	if maxIter == 0 {
		maxIter = 1000
	}
	if tol == 0 {
		tol = 1e-8
	}
	if !(lr > 0) || maxIter < 0 || !(tol > 0) {
		return LocalFitResult{}, fmt.Errorf("local fit: invalid LearningRate %v, MaxIter %d or Tol %v", lr, maxIter, tol)
	}
	w := make([]float64, len(x))
	if err := normalizedWeights(k, h, query, x, w); err != nil {
		return LocalFitResult{}, fmt.Errorf("local fit: %w", err)
	}
	theta := append([]float64(nil), opts.Init...)
	grad := make([]float64, len(theta))
	// eval sets grad to the weighted gradient at theta and returns the weighted loss.
	eval := func() (float64, error) {
		clear(grad)
		var total float64
		for i, xi := range x {
			if w[i] == 0 {
				continue
			}
			var yi []float64
			if y != nil {
				yi = y[i]
			}
			l, g := loss(xi, yi, theta)
			if len(g) != len(theta) {
				return 0, fmt.Errorf("loss gradient has length %d, θ has %d", len(g), len(theta))
			}
			total += w[i] * l
			for j, gj := range g {
				grad[j] += w[i] * gj
			}
		}
		return total, nil
	}
	res := LocalFitResult{Theta: theta}
	for {
		l, err := eval()
		if err != nil {
			return LocalFitResult{}, fmt.Errorf("local fit: %w", err)
		}
		res.Loss = l
		if math.IsNaN(l) || math.IsInf(l, 0) {
			return res, fmt.Errorf("local fit: loss is %v after %d steps (diverged; lower LearningRate)", l, res.Iterations)
		}
		if math.Sqrt(dot(grad, grad)) <= tol {
			res.Converged = true
			return res, nil
		}
		if res.Iterations == maxIter {
			return res, nil
		}
		for j := range theta {
			theta[j] -= lr * grad[j]
		}
		res.Iterations++
	}
}

func dot(a, b []float64) float64 {
	var s float64
	for i, v := range a {
		s += v * b[i]
	}
	return s
}
