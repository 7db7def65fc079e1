package optim

import (
	"fmt"
	"math"

	"github.com/locusml/locus/autodiff"
)

// GradNorm returns the L2 norm of all gradients of params taken together, as if they
// were one vector, accumulated in float64.
func GradNorm(params []*autodiff.Param) float64 {
	var s float64
	for _, p := range params {
		switch p.Dtype() {
		case autodiff.Float32:
			s += sumSquares(p.GradFloat32s())
		case autodiff.Float64:
			s += sumSquares(p.GradFloat64s())
		}
	}
	return math.Sqrt(s)
}

// ClipGradNorm scales the gradients of params in place so that their global L2 norm is
// at most maxNorm, and returns the norm before clipping, as
// torch.nn.utils.clip_grad_norm_: gradients are multiplied by
// min(1, maxNorm/(norm + 1e-6)). If the norm is not finite it returns the norm and an
// error and leaves the gradients alone.
func ClipGradNorm(params []*autodiff.Param, maxNorm float64) (float64, error) {
	if !(maxNorm > 0) {
		return 0, fmt.Errorf("clip grad norm: maxNorm %v, want > 0", maxNorm)
	}
	norm := GradNorm(params)
	if math.IsNaN(norm) || math.IsInf(norm, 0) {
		return norm, fmt.Errorf("clip grad norm: gradient norm is %v", norm)
	}
	if coef := maxNorm / (norm + clipEps); coef < 1 {
		for _, p := range params {
			switch p.Dtype() {
			case autodiff.Float32:
				scale(p.GradFloat32s(), coef)
			case autodiff.Float64:
				scale(p.GradFloat64s(), coef)
			}
		}
	}
	return norm, nil
}

// ClipGradValue clamps every gradient element of params to [−maxValue, maxValue], as
// torch.nn.utils.clip_grad_value_.
func ClipGradValue(params []*autodiff.Param, maxValue float64) error {
	if !(maxValue > 0) {
		return fmt.Errorf("clip grad value: maxValue %v, want > 0", maxValue)
	}
	for _, p := range params {
		switch p.Dtype() {
		case autodiff.Float32:
			clamp(p.GradFloat32s(), float32(maxValue))
		case autodiff.Float64:
			clamp(p.GradFloat64s(), maxValue)
		}
	}
	return nil
}

func clamp[T float](x []T, c T) {
	for i, v := range x {
		x[i] = min(max(v, -c), c)
	}
}
