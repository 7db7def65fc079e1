package autodiff

import (
	"fmt"
	"math"

	"gorgonia.org/tensor"
)

// GradCheck configures CheckGradients. Zero fields take the defaults in brackets.
type GradCheck struct {
	Eps  float64 // central-difference step [1e-6]
	RTol float64 // relative tolerance [1e-5]
	ATol float64 // absolute tolerance [1e-8]
	// MaxPerTensor limits how many elements of each tensor are checked (evenly spaced);
	// 0 checks every element.
	MaxPerTensor int
	// Inputs also checks the gradients with respect to float inputs.
	Inputs bool
	// Train builds the graph in training mode; the dropout generator is restored before
	// every evaluation so that every run sees the same masks.
	Train bool
}

// GradMismatch describes the worst element found by CheckGradients.
type GradMismatch struct {
	Tensor        string // parameter name, or "input.<name>"
	Index         int    // flat index
	Analytic      float64
	Numeric       float64
	AbsErr        float64
	RelErr        float64
	CheckedValues int
}

// CheckGradients compares the model's analytic gradients with central finite differences
// of its loss, in float64. The model's parameters must be Float64. It returns the worst
// element and an error if any element differs by more than ATol + RTol·max(|a|, |n|).
func CheckGradients(m *Model, inputs map[string]*tensor.Dense, opt GradCheck) (GradMismatch, error) {
	var worst GradMismatch
	if m.params.dtype != Float64 {
		return worst, fmt.Errorf("gradient check: parameters are %v, want float64", m.params.dtype)
	}
	if opt.Eps == 0 {
		opt.Eps = 1e-6
	}
	if opt.RTol == 0 {
		opt.RTol = 1e-5
	}
	if opt.ATol == 0 {
		opt.ATol = 1e-8
	}
	rng, err := m.RNGState()
	if err != nil {
		return worst, err
	}
	mode := RunMode{Train: opt.Train, Backward: true, InputGrads: opt.Inputs}
	saved := make([][]float64, 0)
	for _, p := range m.params.list {
		g := make([]float64, p.Size())
		for i := range g {
			g[i] = p.GradAt(i)
		}
		saved = append(saved, g)
		p.ZeroGrad()
	}
	defer func() {
		for i, p := range m.params.list {
			d := p.gradTensor().Data()
			for j, v := range saved[i] {
				switch d := d.(type) {
				case []float64:
					d[j] = v
				}
			}
		}
	}()
	if err := m.SetRNGState(rng); err != nil {
		return worst, err
	}
	res, err := m.Run(inputs, mode)
	if err != nil {
		return worst, err
	}
	if !res.HasLoss {
		return worst, fmt.Errorf("gradient check: the model has no loss")
	}
	inGrads := map[string][]float64{}
	for name, t := range res.InputGrads {
		inGrads[name] = append([]float64(nil), t.Data().([]float64)...)
	}
	lossAt := func() (float64, error) {
		if err := m.SetRNGState(rng); err != nil {
			return 0, err
		}
		r, err := m.Run(inputs, RunMode{Train: opt.Train})
		if err != nil {
			return 0, err
		}
		return r.Loss, nil
	}
	worstScore := -1.0
	check := func(name string, vals []float64, analytic func(i int) float64) error {
		n := len(vals)
		stride := 1
		if opt.MaxPerTensor > 0 && n > opt.MaxPerTensor {
			stride = (n + opt.MaxPerTensor - 1) / opt.MaxPerTensor
		}
		for i := 0; i < n; i += stride {
			orig := vals[i]
			vals[i] = orig + opt.Eps
			lp, err := lossAt()
			if err != nil {
				vals[i] = orig
				return err
			}
			vals[i] = orig - opt.Eps
			lm, err := lossAt()
			vals[i] = orig
			if err != nil {
				return err
			}
			num := (lp - lm) / (2 * opt.Eps)
			a := analytic(i)
			abs := math.Abs(a - num)
			scale := math.Max(math.Abs(a), math.Abs(num))
			rel := abs / math.Max(scale, 1e-300)
			score := abs / (opt.ATol + opt.RTol*scale)
			if math.IsNaN(a) || math.IsNaN(num) {
				score = math.Inf(1)
			}
			worst.CheckedValues++
			if score > worstScore {
				worstScore = score
				checked := worst.CheckedValues
				worst = GradMismatch{Tensor: name, Index: i, Analytic: a, Numeric: num, AbsErr: abs, RelErr: rel, CheckedValues: checked}
			}
		}
		return nil
	}
	for _, p := range m.params.list {
		if err := check(p.name, p.Float64s(), p.GradAt); err != nil {
			return worst, err
		}
	}
	if opt.Inputs {
		for name, g := range inGrads {
			vals, ok := inputs[name].Data().([]float64)
			if !ok {
				continue
			}
			if err := check("input."+name, vals, func(i int) float64 { return g[i] }); err != nil {
				return worst, err
			}
		}
	}
	if worstScore > 1 {
		return worst, fmt.Errorf("gradient check: %s[%d]: analytic %.10g, numeric %.10g (abs err %.3g, rel err %.3g)",
			worst.Tensor, worst.Index, worst.Analytic, worst.Numeric, worst.AbsErr, worst.RelErr)
	}
	return worst, nil
}
