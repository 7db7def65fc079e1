package layers

import (
	"reflect"
	"strings"
	"testing"

	"github.com/locusml/locus/autodiff"
)

// TestKernelFastPaths checks that the kernels' exported method sets are the ones a
// caller uses, so that go doc lists no Pair methods on them, and that each keeps its fast
// path (pairOf) under its own name, with the optional forms of autodiff.PairKernel that
// choose the fused ops' loops.
func TestKernelFastPaths(t *testing.T) {
	ps, err := autodiff.NewParams(autodiff.Float64, 1)
	if err != nil {
		t.Fatal(err)
	}
	mix, err := MustParseKernelSpec("mixture(gaussian, cauchy)").Kernel.(Learnable).Bind(ps.Root().Sub("mix"), 1)
	if err != nil {
		t.Fatal(err)
	}
	type (
		linear   = autodiff.LinearPairKernel32
		direct   = autodiff.DirectPairKernel32
		rational = autodiff.RationalPairKernel32
		distance = autodiff.DistancePairKernel32
		mixture  = autodiff.MixturePairKernel32
	)
	cases := []struct {
		kern ContentKernel
		want []reflect.Type // the optional forms its fast path has
	}{
		{Exponential{}, []reflect.Type{reflect.TypeFor[linear]()}},
		{Gaussian{}, []reflect.Type{reflect.TypeFor[linear]()}},
		{Laplacian{}, []reflect.Type{reflect.TypeFor[linear](), reflect.TypeFor[distance]()}},
		{Cauchy{}, []reflect.Type{reflect.TypeFor[direct](), reflect.TypeFor[rational]()}},
		{Epanechnikov{}, []reflect.Type{reflect.TypeFor[direct]()}},
		{Tricube{}, []reflect.Type{reflect.TypeFor[direct](), reflect.TypeFor[distance]()}},
		{Uniform{}, []reflect.Type{reflect.TypeFor[autodiff.PairKernel32]()}},
		{mix, []reflect.Type{reflect.TypeFor[mixture]()}},
	}
	for _, c := range cases {
		for _, ty := range []reflect.Type{reflect.TypeOf(c.kern), reflect.PointerTo(reflect.TypeOf(c.kern))} {
			for i := range ty.NumMethod() {
				if name := ty.Method(i).Name; strings.HasPrefix(name, "Pair") {
					t.Errorf("%v has the exported method %s: fast-path methods belong on its autodiff.PairKernel", ty, name)
				}
			}
		}
		pk := pairOf(c.kern)
		if pk == nil {
			t.Errorf("%s: no fast path", c.kern.Name())
			continue
		}
		if pk.Name() != c.kern.Name() {
			t.Errorf("%s: fast path named %q", c.kern.Name(), pk.Name())
		}
		for _, w := range c.want {
			if !reflect.TypeOf(pk).Implements(w) {
				t.Errorf("%s: fast path %T is not an %v", c.kern.Name(), pk, w)
			}
		}
	}
	if pk := pairOf(MustParseKernelSpec("mixture(gaussian, cauchy)").Kernel); pk != nil {
		t.Errorf("unbound mixture: fast path %T, want none (its logits are not parameters yet)", pk)
	}
}

// foreignKernel stands for a kernel of another package: it implements
// autodiff.PairKernel itself (Gaussian's scores).
type foreignKernel struct{}

func (foreignKernel) Name() string                           { return "foreign" }
func (foreignKernel) LogK(q, k []float64, h float64) float64 { return Gaussian{}.LogK(q, k, h) }
func (foreignKernel) PairTerms() (dot, dist bool)            { return gaussianPair{}.PairTerms() }
func (foreignKernel) PairScores(s, dot, d2 []float64, h float64) {
	gaussianPair{}.PairScores(s, dot, d2, h)
}
func (foreignKernel) Scores(g *autodiff.Graph, q, k *autodiff.Node, h Width) *autodiff.Node {
	return Gaussian{}.Scores(g, q, k, h)
}
func (foreignKernel) PairGrads(gs, dot, d2 []float64, h float64, gdot, gd2 []float64) float64 {
	return gaussianPair{}.PairGrads(gs, dot, d2, h, gdot, gd2)
}

// TestForeignPairKernel checks that a kernel implementing autodiff.PairKernel itself
// runs on the fused ops, alone and times a position kernel.
func TestForeignPairKernel(t *testing.T) {
	for _, kern := range []ContentKernel{foreignKernel{}, Product{Content: foreignKernel{}, Position: Box{Causal: true}}} {
		ps, err := autodiff.NewParams(autodiff.Float64, 1)
		if err != nil {
			t.Fatal(err)
		}
		a, err := NewKernelAttention(ps.Root(), AttentionConfig{Dim: 4, Heads: 1, Kernel: kern})
		if err != nil {
			t.Fatal(err)
		}
		if pk, ok := a.pairKernel(); !ok || pk != (foreignKernel{}) {
			t.Errorf("%s: fast path %v, %v; want the kernel itself", kern.Name(), pk, ok)
		}
	}
}
