package autodiff

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"gorgonia.org/tensor"
)

// Dtype is the element type of parameters and graphs: Float32 for training, Float64 for
// gradient checks.
type Dtype = tensor.Dtype

// The supported element types.
var (
	Float32 = tensor.Float32
	Float64 = tensor.Float64
)

// Param is a learnable tensor that lives outside any graph. Graphs read its value and
// accumulate into its gradient; optimizers update its value in place.
//
// Value and Grad are dense row-major tensors of the same shape and dtype; the Param owns
// their memory. A Param's value keeps its identity (the same backing array) for its whole
// life, so graphs may bind it without copying.
type Param struct {
	name  string
	value *tensor.Dense
	grad  *tensor.Dense
	// gradZero says that the gradient is zero whatever its memory holds: ZeroGrad sets it
	// instead of clearing the memory, a Model's first gradient of the parameter is then
	// written instead of added, and every accessor of the gradient clears the memory
	// first (gradTensor). It saves a pass over every gradient per step.
	gradZero bool
}

// Name returns the parameter's hierarchical name, e.g. "blocks.0.attn.q.weight".
func (p *Param) Name() string { return p.name }

// Shape returns a copy of the parameter's shape.
func (p *Param) Shape() []int { return append([]int(nil), p.value.Shape()...) }

// Dtype returns the parameter's element type.
func (p *Param) Dtype() Dtype { return p.value.Dtype() }

// Size returns the number of elements.
func (p *Param) Size() int { return p.value.Shape().TotalSize() }

// Value returns the tensor holding the parameter's value. Writes to it change the parameter.
func (p *Param) Value() *tensor.Dense { return p.value }

// Grad returns the tensor holding the accumulated gradient.
func (p *Param) Grad() *tensor.Dense { return p.gradTensor() }

// gradTensor returns the gradient with its memory holding its value: cleared if
// ZeroGrad left it to be.
func (p *Param) gradTensor() *tensor.Dense {
	if p.gradZero {
		p.grad.Zero()
		p.gradZero = false
	}
	return p.grad
}

// Float32s returns the value's backing slice; it panics if the dtype is not Float32.
func (p *Param) Float32s() []float32 { return float32s(p.value) }

// Float64s returns the value's backing slice; it panics if the dtype is not Float64.
func (p *Param) Float64s() []float64 { return float64s(p.value) }

// GradFloat32s returns the gradient's backing slice (Float32 params).
func (p *Param) GradFloat32s() []float32 { return float32s(p.gradTensor()) }

// GradFloat64s returns the gradient's backing slice (Float64 params).
func (p *Param) GradFloat64s() []float64 { return float64s(p.gradTensor()) }

// float32s and float64s return a tensor's backing slice without the allocations of
// Dense.Data; they panic on another dtype, as Data's type assertion did.
func float32s(t *tensor.Dense) []float32 {
	if t.Dtype() != Float32 {
		panic(fmt.Sprintf("autodiff: %v tensor, want float32", t.Dtype()))
	}
	return t.Float32s()
}

func float64s(t *tensor.Dense) []float64 {
	if t.Dtype() != Float64 {
		panic(fmt.Sprintf("autodiff: %v tensor, want float64", t.Dtype()))
	}
	return t.Float64s()
}

// At returns element i of the flattened value as float64, whatever the dtype.
func (p *Param) At(i int) float64 {
	switch p.value.Dtype() {
	case Float32:
		d := p.value.Float32s()
		return float64(d[i])
	case Float64:
		d := p.value.Float64s()
		return d[i]
	}
	panic("autodiff: unsupported dtype")
}

// SetAt sets element i of the flattened value.
func (p *Param) SetAt(i int, v float64) {
	switch p.value.Dtype() {
	case Float32:
		d := p.value.Float32s()
		d[i] = float32(v)
	case Float64:
		d := p.value.Float64s()
		d[i] = v
	}
}

// GradAt returns element i of the flattened gradient as float64.
func (p *Param) GradAt(i int) float64 {
	switch g := p.gradTensor(); g.Dtype() {
	case Float32:
		d := g.Float32s()
		return float64(d[i])
	case Float64:
		d := g.Float64s()
		return d[i]
	}
	panic("autodiff: unsupported dtype")
}

// ZeroGrad sets the gradient to zero. The memory is cleared when the gradient is next
// read, or overwritten by the next backward pass.
func (p *Param) ZeroGrad() { p.gradZero = true }

// SetFloat64s copies values (row-major, converted to the parameter's dtype) into the
// parameter. It returns an error if the number of values does not match.
func (p *Param) SetFloat64s(vals []float64) error {
	if len(vals) != p.Size() {
		return fmt.Errorf("set %s: got %d values, want %d (shape %v)", p.name, len(vals), p.Size(), p.value.Shape())
	}
	for i, v := range vals {
		p.SetAt(i, v)
	}
	return nil
}

// Set copies t into the parameter. The shape must match exactly; the dtype may be Float32
// or Float64 and is converted.
func (p *Param) Set(t tensor.Tensor) error {
	if !t.Shape().Eq(p.value.Shape()) {
		return fmt.Errorf("set %s: shape %v does not match parameter shape %v", p.name, t.Shape(), p.value.Shape())
	}
	switch src := t.Data().(type) {
	case []float32:
		for i, v := range src {
			p.SetAt(i, float64(v))
		}
	case []float64:
		for i, v := range src {
			p.SetAt(i, v)
		}
	default:
		return fmt.Errorf("set %s: unsupported dtype %v", p.name, t.Dtype())
	}
	return nil
}

// Params is an ordered registry of parameters with unique hierarchical names and a seeded
// random number generator for their initialisation. Build models under Params.Scope.
type Params struct {
	dtype  Dtype
	rng    *rand.Rand
	list   []*Param
	byName map[string]*Param
}

// NewParams returns an empty registry whose parameters have the given dtype and whose
// initialisers draw from a PCG generator seeded with seed.
func NewParams(dtype Dtype, seed uint64) (*Params, error) {
	if dtype != Float32 && dtype != Float64 {
		return nil, fmt.Errorf("autodiff: unsupported dtype %v (want float32 or float64)", dtype)
	}
	return &Params{
		dtype:  dtype,
		rng:    rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)),
		byName: map[string]*Param{},
	}, nil
}

// Dtype returns the dtype of every parameter in the registry.
func (ps *Params) Dtype() Dtype { return ps.dtype }

// List returns the parameters in creation order.
func (ps *Params) List() []*Param { return append([]*Param(nil), ps.list...) }

// Names returns the parameter names in creation order.
func (ps *Params) Names() []string {
	names := make([]string, len(ps.list))
	for i, p := range ps.list {
		names[i] = p.name
	}
	return names
}

// SortedNames returns the parameter names in lexical order.
func (ps *Params) SortedNames() []string {
	names := ps.Names()
	sort.Strings(names)
	return names
}

// Get returns the parameter with the given name, or nil.
func (ps *Params) Get(name string) *Param { return ps.byName[name] }

// Len returns the number of parameters.
func (ps *Params) Len() int { return len(ps.list) }

// NumElements returns the total number of scalar parameters.
func (ps *Params) NumElements() int {
	n := 0
	for _, p := range ps.list {
		n += p.Size()
	}
	return n
}

// ZeroGrad clears every parameter's gradient. Gradients accumulate across backward passes
// until cleared, as in PyTorch.
func (ps *Params) ZeroGrad() {
	for _, p := range ps.list {
		p.ZeroGrad()
	}
}

// Root returns the top-level scope.
func (ps *Params) Root() Scope { return Scope{ps: ps} }

// Scope returns the scope with the given dotted prefix, e.g. ps.Scope("blocks").Sub("0").
func (ps *Params) Scope(name string) Scope { return Scope{ps: ps}.Sub(name) }

// Scope is a position in the parameter name hierarchy. Scopes are cheap values.
type Scope struct {
	ps     *Params
	prefix string
}

// Sub returns the child scope name under s.
func (s Scope) Sub(name string) Scope {
	if s.prefix == "" {
		return Scope{ps: s.ps, prefix: name}
	}
	return Scope{ps: s.ps, prefix: s.prefix + "." + name}
}

// Subf returns the child scope fmt.Sprintf(format, args...).
func (s Scope) Subf(format string, args ...any) Scope { return s.Sub(fmt.Sprintf(format, args...)) }

// Name returns the scope's dotted prefix.
func (s Scope) Name() string { return s.prefix }

// Params returns the registry the scope belongs to.
func (s Scope) Params() *Params { return s.ps }

// New creates the parameter s.Name()+"."+name with the given shape, initialised by init.
// Names must be unique and made of letters, digits, '_' and '-' separated by dots.
func (s Scope) New(name string, shape []int, init Init) (*Param, error) {
	full := name
	if s.prefix != "" {
		full = s.prefix + "." + name
	}
	if err := validName(full); err != nil {
		return nil, err
	}
	if _, dup := s.ps.byName[full]; dup {
		return nil, fmt.Errorf("autodiff: parameter %q already exists", full)
	}
	if len(shape) == 0 {
		return nil, fmt.Errorf("autodiff: parameter %q: empty shape", full)
	}
	for _, d := range shape {
		if d <= 0 {
			return nil, fmt.Errorf("autodiff: parameter %q: invalid shape %v", full, shape)
		}
	}
	if init == nil {
		return nil, fmt.Errorf("autodiff: parameter %q: nil initialiser", full)
	}
	sh := append([]int(nil), shape...)
	p := &Param{
		name:  full,
		value: tensor.New(tensor.WithShape(sh...), tensor.Of(s.ps.dtype)),
		grad:  tensor.New(tensor.WithShape(sh...), tensor.Of(s.ps.dtype)),
	}
	vals := make([]float64, p.Size())
	if err := init.fill(vals, sh, s.ps.rng); err != nil {
		return nil, fmt.Errorf("autodiff: parameter %q: %w", full, err)
	}
	if err := p.SetFloat64s(vals); err != nil {
		return nil, err
	}
	s.ps.list = append(s.ps.list, p)
	s.ps.byName[full] = p
	return p, nil
}

func validName(name string) error {
	if name == "" {
		return fmt.Errorf("autodiff: empty parameter name")
	}
	for _, part := range strings.Split(name, ".") {
		if part == "" {
			return fmt.Errorf("autodiff: parameter name %q has an empty component", name)
		}
		for _, r := range part {
			ok := r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
			if !ok {
				return fmt.Errorf("autodiff: parameter name %q: invalid character %q", name, r)
			}
		}
	}
	return nil
}

// Init fills a new parameter. The fan-in and fan-out of a shape follow PyTorch: for a 2-D
// weight stored [out, in], fan_in = in and fan_out = out; Locus's Linear stores [in, out]
// and passes its fans explicitly through the Linear initialisers.
type Init interface {
	fill(vals []float64, shape []int, rng *rand.Rand) error
}

type initFunc func(vals []float64, shape []int, rng *rand.Rand) error

func (f initFunc) fill(vals []float64, shape []int, rng *rand.Rand) error { return f(vals, shape, rng) }

// Zeros initialises every element to 0.
func Zeros() Init { return Constant(0) }

// Ones initialises every element to 1.
func Ones() Init { return Constant(1) }

// Constant initialises every element to c.
func Constant(c float64) Init {
	return initFunc(func(vals []float64, _ []int, _ *rand.Rand) error {
		for i := range vals {
			vals[i] = c
		}
		return nil
	})
}

// Normal draws from N(mean, std²).
func Normal(mean, std float64) Init {
	return initFunc(func(vals []float64, _ []int, rng *rand.Rand) error {
		if std < 0 {
			return fmt.Errorf("normal init: negative std %g", std)
		}
		for i := range vals {
			vals[i] = mean + std*rng.NormFloat64()
		}
		return nil
	})
}

// Uniform draws from U(lo, hi).
func Uniform(lo, hi float64) Init {
	return initFunc(func(vals []float64, _ []int, rng *rand.Rand) error {
		if hi < lo {
			return fmt.Errorf("uniform init: hi %g < lo %g", hi, lo)
		}
		for i := range vals {
			vals[i] = lo + (hi-lo)*rng.Float64()
		}
		return nil
	})
}

// XavierUniform (Glorot) draws from U(±sqrt(6/(fanIn+fanOut))).
func XavierUniform(fanIn, fanOut int) Init {
	return withFans("xavier uniform", fanIn, fanOut, func() Init {
		a := math.Sqrt(6 / float64(fanIn+fanOut))
		return Uniform(-a, a)
	})
}

// XavierNormal (Glorot) draws from N(0, 2/(fanIn+fanOut)).
func XavierNormal(fanIn, fanOut int) Init {
	return withFans("xavier normal", fanIn, fanOut, func() Init {
		return Normal(0, math.Sqrt(2/float64(fanIn+fanOut)))
	})
}

// KaimingUniform (He, ReLU gain) draws from U(±sqrt(6/fanIn)).
func KaimingUniform(fanIn int) Init {
	return withFans("kaiming uniform", fanIn, 1, func() Init {
		a := math.Sqrt(6 / float64(fanIn))
		return Uniform(-a, a)
	})
}

// KaimingNormal (He, ReLU gain) draws from N(0, 2/fanIn).
func KaimingNormal(fanIn int) Init {
	return withFans("kaiming normal", fanIn, 1, func() Init { return Normal(0, math.Sqrt(2/float64(fanIn))) })
}

// TorchLinear is PyTorch's default nn.Linear initialisation for both weight and bias:
// U(±1/sqrt(fanIn)).
func TorchLinear(fanIn int) Init {
	return withFans("torch linear", fanIn, 1, func() Init {
		a := 1 / math.Sqrt(float64(fanIn))
		return Uniform(-a, a)
	})
}

// withFans returns make() if the fans are positive, else an initialiser that fails.
func withFans(name string, fanIn, fanOut int, make func() Init) Init {
	if fanIn <= 0 || fanOut <= 0 {
		return initFunc(func([]float64, []int, *rand.Rand) error {
			return fmt.Errorf("%s init: fans %d, %d must be positive", name, fanIn, fanOut)
		})
	}
	return make()
}
