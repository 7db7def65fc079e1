package autodiff

import (
	"math"
	"strings"
	"testing"

	"gorgonia.org/tensor"
)

// testMix is the mixture log Σ_l softmax(θ)_l K_l of its components, pair by pair
// (a ParamPairKernel written plainly, for the op tests).
type testMix []PairKernel

func (m testMix) Name() string { return "mix" }
func (m testMix) PairTerms() (dot, dist bool) {
	for _, c := range m {
		d, s := c.PairTerms()
		dot, dist = dot || d, dist || s
	}
	return dot, dist
}
func (m testMix) PairParamCount() int { return len(m) }
func (m testMix) PairComponents32() []PairKernel32 {
	var out []PairKernel32
	for _, c := range m {
		c32, ok := c.(PairKernel32)
		if !ok {
			return nil
		}
		out = append(out, c32)
	}
	return out
}
func (m testMix) PairScores(s, dot, d2 []float64, h float64) {
	m.PairScoresAt(make([]float64, len(m)), s, dot, d2, h)
}
func (m testMix) PairGrads(gs, dot, d2 []float64, h float64, gdot, gd2 []float64) float64 {
	return m.PairGradsAt(make([]float64, len(m)), gs, dot, d2, h, gdot, gd2, nil)
}

// parts returns the weights softmax(θ) and each component's K of pair j.
func (m testMix) parts(theta, dot, d2 []float64, h float64, j int) (w, k []float64) {
	w, k = make([]float64, len(m)), make([]float64, len(m))
	var z float64
	for l := range m {
		w[l] = math.Exp(theta[l])
		z += w[l]
	}
	for l, c := range m {
		w[l] /= z
		var dj, d2j []float64
		if dot != nil {
			dj = dot[j : j+1]
		}
		if d2 != nil {
			d2j = d2[j : j+1]
		}
		s := []float64{0}
		c.PairScores(s, dj, d2j, h)
		k[l] = math.Exp(s[0])
	}
	return w, k
}

func (m testMix) PairScoresAt(theta, s, dot, d2 []float64, h float64) {
	for j := range s {
		w, k := m.parts(theta, dot, d2, h, j)
		var sum float64
		for l := range m {
			sum += w[l] * k[l]
		}
		s[j] = math.Log(sum)
	}
}

func (m testMix) PairGradsAt(theta, gs, dot, d2 []float64, h float64, gdot, gd2, gtheta []float64) float64 {
	var gh float64
	for j, g := range gs {
		if g == 0 {
			continue
		}
		w, k := m.parts(theta, dot, d2, h, j)
		var sum float64
		for l := range m {
			sum += w[l] * k[l]
		}
		for l, c := range m {
			r := w[l] * k[l] / sum
			if gtheta != nil {
				gtheta[l] += g * (r - w[l])
			}
			one := func(x []float64) []float64 {
				if x == nil {
					return nil
				}
				return x[j : j+1]
			}
			cd, cd2 := []float64{0}, []float64{0}
			gh += c.PairGrads([]float64{g * r}, one(dot), one(d2), h, cd, cd2)
			if gdot != nil {
				gdot[j] += cd[0]
			}
			if gd2 != nil {
				gd2[j] += cd2[0]
			}
		}
	}
	return gh
}

// testScaled is kern at bandwidth c·h (a narrower compact kernel for c < 1).
type testScaled struct {
	kern PairKernel
	c    float64
}

func (k testScaled) Name() string                { return "scaled" }
func (k testScaled) PairTerms() (dot, dist bool) { return k.kern.PairTerms() }
func (k testScaled) PairScores(s, dot, d2 []float64, h float64) {
	k.kern.PairScores(s, dot, d2, k.c*h)
}
func (k testScaled) PairGrads(gs, dot, d2 []float64, h float64, gdot, gd2 []float64) float64 {
	return k.c * k.kern.PairGrads(gs, dot, d2, k.c*h, gdot, gd2)
}

// TestParamPairKernelSupports checks that the compact mixture case of tiledCases covers
// what it is there for: pairs inside both supports, inside one only, and outside both,
// and that both ops give finite outputs and θ gradients there.
func TestParamPairKernelSupports(t *testing.T) {
	var c tiledCase
	for _, x := range tiledCases {
		if x.name == "mixCompactPad" {
			c = x
		}
	}
	params, inputs := c.tensors(2)
	q, k, h := params["q"].Float64s(), params["k"].Float64s(), params["h"].Float64s()
	mix := c.kern.(testMix)
	var counts [3]int // pairs inside 0, 1 and 2 supports
	for p := range c.b * c.h {
		for i := range c.tq {
			for j := range c.tk {
				var d2 float64
				for e := range 3 {
					x := q[(p*c.tq+i)*3+e] - k[(p*c.tk+j)*3+e]
					d2 += x * x
				}
				inside := 0
				for _, comp := range mix {
					s := []float64{0}
					comp.PairScores(s, nil, []float64{d2}, h[p%c.h])
					if !math.IsInf(s[0], -1) {
						inside++
					}
				}
				counts[inside]++
			}
		}
	}
	if counts[0] == 0 || counts[1] == 0 || counts[2] == 0 {
		t.Fatalf("pairs inside 0, 1, 2 supports: %v, want some of each", counts)
	}
	for name, op := range map[string]pairOp{"TiledLocalMean": (*Graph).TiledLocalMean, "KernelAttention": (*Graph).KernelAttention} {
		m, byName := newTestModel(t, Float64, params, []string{"km"}, c.buildWith(op), 1)
		res, err := m.Run(inputs, RunMode{Backward: true})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		vals := floats(res.Values["out"])
		for i := range c.kern.(testMix) {
			vals = append(vals, byName["theta"].GradAt(i))
		}
		for _, x := range vals {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				t.Fatalf("%s: non-finite output or θ gradient %g", name, x)
			}
		}
	}
}

// TestParamPairKernelErrors checks the errors for kernel parameters that are missing,
// misshapen, or given to a kernel without parameters.
func TestParamPairKernelErrors(t *testing.T) {
	zeros := func(n int) *tensor.Dense {
		return tensor.New(tensor.WithShape(n), tensor.WithBacking(make([]float64, n)))
	}
	for _, c := range []struct {
		kern  PairKernel
		theta *tensor.Dense
		want  string
	}{
		{testMix{testExp{}, testGauss{}}, nil, "TiledLocalMean: kernel mix has 2 parameters of its own but KernelParams is nil"},
		{testMix{testExp{}, testGauss{}}, zeros(3), "TiledLocalMean: kernel parameters (3), want [2] for kernel mix"},
		{testExp{}, zeros(2), "TiledLocalMean: kernel parameters (2) given, but kernel exp has none"},
	} {
		g := NewGraph(Float64, false, 1)
		q := g.ConstTensor([]int{1, 3, 2}, make([]float64, 6))
		opt := TiledOptions{BandwidthValue: 1}
		if c.theta != nil {
			opt.KernelParams = g.ConstTensor(c.theta.Shape(), c.theta.Float64s())
		}
		if m := g.TiledLocalMean(c.kern, q, q, q, opt); m != nil || g.Err() == nil {
			t.Fatalf("%s: got %v, error %v", c.want, m, g.Err())
		}
		if msg := g.Err().Error(); !strings.Contains(msg, c.want) {
			t.Errorf("error %q, want %q", msg, c.want)
		}
	}
}
