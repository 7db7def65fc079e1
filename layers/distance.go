package layers

import (
	"math"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/onnx"
)

func init() {
	RegisterKernel(KernelForm{
		Name: "distance", Syntax: "distance(S)", Example: "exponential * distance(0.1)", MinArgs: 1, MaxArgs: 1,
		Doc: "log K = −S·|t − s|: a fixed penalty on distance (ALiBi-like)",
		Parse: func(args []SpecArg) (Term, error) {
			s, err := args[0].Float("slope S", 0, 1e6)
			return DistancePenalty{Slope: s}, err
		},
	})
}

// DistancePenalty is the fixed Laplacian kernel on positions, log K(t, s) = −Slope·|t − s|
// (ALiBi's linear bias with one slope for all heads).
type DistancePenalty struct{ Slope float64 }

// Name returns the spec "distance(S)".
func (d DistancePenalty) Name() string { return formatArgs("distance", d.Slope) }

// MarshalText returns the spec.
func (d DistancePenalty) MarshalText() ([]byte, error) { return []byte(d.Name()), nil }

// UnmarshalText parses a spec of a distance penalty.
func (d *DistancePenalty) UnmarshalText(b []byte) error { return unmarshalTerm(b, d) }

// Restrict returns m unchanged.
func (DistancePenalty) Restrict(m autodiff.Mask) autodiff.Mask { return m }

// PositionScores returns −Slope·|t − s| (P = 1).
func (d DistancePenalty) PositionScores(g *autodiff.Graph, tq, tk, offset int) *autodiff.Node {
	vals := make([]float64, tq*tk)
	for t := range tq {
		for s := range tk {
			vals[t*tk+s] = -d.Slope * math.Abs(float64(t+offset-s))
		}
	}
	return g.ConstTensor([]int{tq * tk}, vals)
}

// ONNXPositionScores writes −Slope·|t − s| [Tq, Tk] into g.
func (d DistancePenalty) ONNXPositionScores(g *onnx.Graph, pos ONNXPositions) string {
	return g.Scale(g.Unary("Abs", g.Cast(pos.Diff, onnx.Float)), -d.Slope)
}

// RelativeScores returns −Slope·|r| for r = −M..M, M = max(tq + offset, tk) (P = 1), a
// table as long as the sequence that no relative position outgrows.
func (d DistancePenalty) RelativeScores(g *autodiff.Graph, tq, tk, offset int) *autodiff.Node {
	m := max(tq+offset, tk)
	vals := make([]float64, 2*m+1)
	for r := -m; r <= m; r++ {
		vals[r+m] = -d.Slope * math.Abs(float64(r))
	}
	return g.ConstTensor([]int{1, 2*m + 1}, vals)
}
