package layers

import (
	"fmt"
	"math"

	"github.com/locusml/locus/autodiff"
)

// Init selects how a layer initialises its parameters.
type Init int

const (
	// InitTorch is PyTorch's module default: Linear weight and bias ~ U(±1/√in),
	// Embedding ~ N(0, 1), norm weight 1 and bias 0.
	InitTorch Init = iota
	// InitGPT is the GPT-2 scheme of the reference workloads: Linear weight ~ N(0, 0.02²),
	// Linear bias 0, Embedding ~ N(0, 0.02²), norm weight 1 and bias 0.
	InitGPT
	// InitGPT2 is InitGPT with GPT-2's residual-projection scaling: the linear map that
	// ends each residual branch of a Block or a decoder block (attn.o, xattn.o, ffn.fc2)
	// has std 0.02/√(2·Depth), Depth being the blocks of the stack (BlockConfig.Depth).
	// Its draws are InitGPT's, those matrices scaled, so the two agree elsewhere.
	InitGPT2
)

var initNames = []string{"torch", "gpt", "gpt2"}

// InitNames returns the text forms of the initialisations.
func InitNames() []string { return append([]string(nil), initNames...) }

// String returns "torch", "gpt" or "gpt2".
func (i Init) String() string { return stringEnum("Init", initNames, i) }

// MarshalText returns the initialisation's name.
func (i Init) MarshalText() ([]byte, error) { return marshalEnum("initialisation", initNames, i) }

// UnmarshalText parses an initialisation's name.
func (i *Init) UnmarshalText(b []byte) (err error) {
	*i, err = parseEnum[Init]("initialisation", initNames, string(b))
	return err
}

func (i Init) validate(field string) error {
	if i < InitTorch || i > InitGPT2 {
		return fmt.Errorf("%s: unknown initialisation %v", field, i)
	}
	return nil
}

// gptStd is the standard deviation of InitGPT's normal draws.
const gptStd = 0.02

// gpt reports whether i draws N(0, 0.02²) weights (InitGPT, InitGPT2).
func (i Init) gpt() bool { return i == InitGPT || i == InitGPT2 }

// scaleResidual scales the weights of the linear maps ls, the output projections of a
// block's residual branches, by 1/√(2·depth) under InitGPT2 (depth 0 counts as 1); under
// the other initialisations it does nothing.
func (i Init) scaleResidual(depth int, ls ...*Linear) {
	if i != InitGPT2 {
		return
	}
	f := 1 / math.Sqrt(2*float64(max(depth, 1)))
	for _, l := range ls {
		w := l.Weight
		for j := range w.Size() {
			w.SetAt(j, f*w.At(j))
		}
	}
}

func (i Init) linearWeight(in int) autodiff.Init {
	if i.gpt() {
		return autodiff.Normal(0, gptStd)
	}
	return autodiff.TorchLinear(in)
}

func (i Init) linearBias(in int) autodiff.Init {
	if i.gpt() {
		return autodiff.Zeros()
	}
	return autodiff.TorchLinear(in)
}

func (i Init) embedding() autodiff.Init {
	if i.gpt() {
		return autodiff.Normal(0, gptStd)
	}
	return autodiff.Normal(0, 1)
}

// newParam creates scope.name, wrapping the error with the layer's name.
func newParam(s autodiff.Scope, layer, name string, shape []int, init autodiff.Init) (*autodiff.Param, error) {
	p, err := s.New(name, shape, init)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", layer, s.Name(), err)
	}
	return p, nil
}

// softplusInv returns ρ with softplus(ρ) = y > 0, computed stably.
func softplusInv(y float64) float64 {
	return y + math.Log(-math.Expm1(-y))
}

func softplus(x float64) float64 {
	if x > 0 {
		return x + math.Log1p(math.Exp(-x))
	}
	return math.Log1p(math.Exp(x))
}

// fail records err in g as "<layer> <scope>: err" and returns nil.
func fail(g *autodiff.Graph, layer, scope, format string, args ...any) *autodiff.Node {
	return g.Fail(fmt.Errorf("%s %q: %s", layer, scope, fmt.Sprintf(format, args...)))
}

// ready reports whether the graph has no error and every node is non-nil, recording an
// error naming the layer otherwise.
func ready(g *autodiff.Graph, layer, scope string, nodes ...*autodiff.Node) bool {
	if g == nil {
		return false
	}
	if g.Err() != nil {
		return false
	}
	for i, n := range nodes {
		if n == nil {
			fail(g, layer, scope, "input %d is nil", i)
			return false
		}
	}
	return true
}
