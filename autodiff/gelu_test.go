package autodiff

import (
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

func TestGELUGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, approx := range []GELUApprox{GELUExact, GELUTanh} {
		for _, s := range [][]int{{1, 1}, {5, 1}, {3, 7}, {2, 3, 4}} {
			checkOp(t, "GELU "+approx.String(), map[string]*tensor.Dense{"x": randTensor(rng, 3, s...)}, nil,
				func(g *Graph, p map[string]*Node) *Node { return g.GELU(p["x"], approx) }, tol)
		}
	}
}

func TestGELUValues(t *testing.T) {
	// Reference values from Python's math.erf / math.tanh (the formulas PyTorch documents
	// for approximate='none' and approximate='tanh').
	x := []float64{-3, -1, -0.5, 0, 0.5, 1, 3}
	exact := []float64{-0.00404969409489031, -0.15865525393145707, -0.15426876936299344, 0,
		0.34573123063700656, 0.8413447460685429, 2.99595030590511}
	tanh := []float64{-0.0036373920817729943, -0.15880800939172324, -0.15428599017485606, 0,
		0.34571400982514394, 0.8411919906082768, 2.996362607918227}
	for _, tc := range []struct {
		approx GELUApprox
		want   []float64
	}{{GELUExact, exact}, {GELUTanh, tanh}} {
		for _, dt := range []Dtype{Float64, Float32} {
			got := evalOp(t, dt, false, map[string]*tensor.Dense{"x": denseOf([]int{7}, x...)}, nil,
				func(g *Graph, p map[string]*Node) *Node { return g.GELU(p["x"], tc.approx) })
			rtol := 1e-14
			if dt == Float32 {
				rtol = 1e-6
			}
			checkValues(t, "GELU "+tc.approx.String()+" "+dt.String(), got, tc.want, rtol, 1e-15)
		}
	}
	// Large tensors go through the parallel path.
	rng := rand.New(rand.NewPCG(1, 1))
	big := randTensor(rng, 4, 64, 1000)
	want := make([]float64, 64000)
	for i, v := range big.Data().([]float64) {
		want[i] = geluExactRef(float64(float32(v)))
	}
	checkBothDtypes(t, "GELU big", map[string]*tensor.Dense{"x": big}, nil,
		func(g *Graph, p map[string]*Node) *Node { return g.GELU(p["x"], GELUExact) }, want)
}

func geluExactRef(x float64) float64 {
	// Φ(x) via the complementary error function, independent of the kernel's formula.
	return x * 0.5 * math.Erfc(-x/math.Sqrt2)
}

func TestGELUErrors(t *testing.T) {
	err := buildErr(t, "approx", func(g *Graph) *Node {
		return g.GELU(g.addInput("x", Float64, tensor.Shape{2}), GELUApprox(7))
	})
	wantErrContains(t, "approx", err, "GELU", "GELUApprox(7)")
	g := NewGraph(Float64, false, 1)
	x := g.addInput("x", Float64, tensor.Shape{2})
	if a, b := g.GELU(x, GELUExact), g.GELU(x, GELUTanh); a == nil || b == nil || a.n == b.n {
		t.Error("exact and tanh GELU were merged")
	}
}

func TestGELUFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for _, a := range []GELUApprox{GELUTanh, GELUExact} {
		checkFloat32(t, "GELU "+a.String(), map[string]*tensor.Dense{"x": randTensor(rng, 2, 3, 5000)}, func(g *Graph, p map[string]*Node) *Node {
			return g.GELU(p["x"], a)
		})
	}
}

// TestGELUExactFloat32: the float32 fast path of the exact GELU (erfc fit, vectorised
// exponentials) against Φ in float64, forward and backward, over [−12, 12]: within
// 5e-7 + 6e-8·x² relative (about 4 float32 ulps near 0, 4e-6 at 8, where GELU(−8) ≈ −5e-15: the
// float32 rounding of the exponent −x²/2), with no cancellation for negative x.
func TestGELUExactFloat32(t *testing.T) {
	var x []float32
	for v := -12.0; v <= 12; v += 0.0007 {
		x = append(x, float32(v))
	}
	x = append(x, 0, 1e-30, -1e-30, 1e-8, -1e-8)
	n := len(x)
	y, g, dx := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range g {
		g[i] = 1
	}
	geluExact32(x, y)
	geluExactGrad32(x, g, dx)
	worst := [2]float64{}
	for i, v32 := range x {
		v := float64(v32)
		phi := 0.5 * math.Erfc(-v/math.Sqrt2)
		wantY := v * phi
		wantD := phi + v*math.Exp(-v*v/2)/math.Sqrt(2*math.Pi)
		tol := 5e-7 + 6e-8*v*v
		// GELU' = Φ + x·φ is a difference for negative x (0 at x ≈ −0.75): its error is
		// measured against the size of its terms.
		scale := [2]float64{math.Abs(wantY), phi + math.Abs(v)*math.Exp(-v*v/2)/math.Sqrt(2*math.Pi)}
		for k, c := range [][2]float64{{float64(y[i]), wantY}, {float64(dx[i]), wantD}} {
			err := math.Abs(c[0] - c[1])
			if scale[k] != 0 {
				err /= scale[k]
			}
			if math.Abs(c[1]) < 1e-37 { // below float32's normals: 0 is right
				err = math.Abs(c[0])
			}
			worst[k] = max(worst[k], err)
			if !(err <= tol) {
				t.Fatalf("x = %g: %s %g, want %g (relative error %.3g > %g)", v, [2]string{"GELU", "GELU'"}[k], c[0], c[1], err, tol)
			}
		}
	}
	t.Logf("largest relative errors: GELU %.3g, GELU' %.3g", worst[0], worst[1])
}
