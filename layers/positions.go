package layers

import (
	"fmt"
	"math"
	"slices"

	"github.com/locusml/locus/autodiff"
)

// PositionEncoding says how a Transformer tells positions apart (THEORY.md §5).
type PositionEncoding int

const (
	// PositionsLearned adds a learned vector per absolute position (LearnedPositions).
	PositionsLearned PositionEncoding = iota
	// PositionsSinusoidal adds the fixed sinusoids of "Attention is all you need".
	PositionsSinusoidal
	// PositionsRotary rotates queries and keys by their positions (ApplyRotary).
	PositionsRotary
	// PositionsNone adds no position information to the tokens: what a model knows of
	// positions comes from its kernel alone (position factors such as distance(S), the
	// linear penalty of ALiBi, window(W) or relbias(M)) and from causality. With a
	// relative position kernel the model computes the same function of a token's
	// neighbourhood at every position, so it runs at any sequence length.
	PositionsNone
)

var positionEncodingNames = []string{"learned", "sinusoidal", "rotary", "none"}

// PositionEncodingNames returns the text forms of the position encodings.
func PositionEncodingNames() []string { return append([]string(nil), positionEncodingNames...) }

// String returns "learned", "sinusoidal", "rotary" or "none".
func (p PositionEncoding) String() string {
	return stringEnum("PositionEncoding", positionEncodingNames, p)
}

// MarshalText returns the encoding's name.
func (p PositionEncoding) MarshalText() ([]byte, error) {
	return marshalEnum("position encoding", positionEncodingNames, p)
}

// UnmarshalText parses an encoding's name.
func (p *PositionEncoding) UnmarshalText(b []byte) (err error) {
	*p, err = parseEnum[PositionEncoding]("position encoding", positionEncodingNames, string(b))
	return err
}

// PositionsConfig configures a learned absolute position embedding.
type PositionsConfig struct {
	MaxLen int // longest sequence, > 0
	Dim    int // > 0
	Init   Init
}

// Validate reports the first invalid field.
func (c PositionsConfig) Validate() error {
	if c.MaxLen <= 0 {
		return fmt.Errorf("PositionsConfig.MaxLen = %d, want > 0", c.MaxLen)
	}
	if c.Dim <= 0 {
		return fmt.Errorf("PositionsConfig.Dim = %d, want > 0", c.Dim)
	}
	return c.Init.validate("PositionsConfig.Init")
}

// LearnedPositions adds a learned vector per absolute position (GPT's pos_emb): the
// kernel on shifted arguments K(x_t + p(t), x_s + p(s)) of THEORY.md §5. Its parameter is
// `<scope>.weight` [MaxLen, Dim], initialised like an Embedding.
type LearnedPositions struct {
	Weight *autodiff.Param
	MaxLen int
	Dim    int
	scope  string
}

// NewLearnedPositions creates the position table under s.
func NewLearnedPositions(s autodiff.Scope, cfg PositionsConfig) (*LearnedPositions, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("positions %q: %w", s.Name(), err)
	}
	w, err := newParam(s, "positions", "weight", []int{cfg.MaxLen, cfg.Dim}, cfg.Init.embedding())
	if err != nil {
		return nil, err
	}
	return &LearnedPositions{Weight: w, MaxLen: cfg.MaxLen, Dim: cfg.Dim, scope: s.Name()}, nil
}

// Forward returns x [B, T, Dim] plus the vectors of positions offset..offset+T−1.
func (p *LearnedPositions) Forward(g *autodiff.Graph, x *autodiff.Node, offset int) *autodiff.Node {
	if !ready(g, "positions", p.scope, x) {
		return nil
	}
	xs := x.Shape()
	if len(xs) != 3 || xs[2] != p.Dim {
		return fail(g, "positions", p.scope, "input %v, want [B, T, %d]", xs, p.Dim)
	}
	if offset < 0 || offset+xs[1] > p.MaxLen {
		return fail(g, "positions", p.scope, "positions %d..%d outside the table's %d", offset, offset+xs[1]-1, p.MaxLen)
	}
	pos := g.Slice(g.Param(p.Weight), 0, offset, offset+xs[1])
	return addPerPosition(g, x, g.Reshape(pos, []int{xs[1] * xs[2]}))
}

// ForwardAt returns x [B, T, Dim] plus the vectors of the positions pos, an int node
// [T] (positions as data: one compiled decoding step serves every position). A position
// outside the table fails when the graph runs.
func (p *LearnedPositions) ForwardAt(g *autodiff.Graph, x, pos *autodiff.Node) *autodiff.Node {
	if !ready(g, "positions", p.scope, x, pos) {
		return nil
	}
	xs := x.Shape()
	if len(xs) != 3 || xs[2] != p.Dim || !slices.Equal(pos.Shape(), []int{xs[1]}) {
		return fail(g, "positions", p.scope, "input %v and positions %v, want [B, T, %d] and [T]", xs, pos.Shape(), p.Dim)
	}
	rows := g.Gather(g.Param(p.Weight), pos)
	return addPerPosition(g, x, g.Reshape(rows, []int{xs[1] * xs[2]}))
}

// addPerPosition adds pos [T·D] (row-major [T, D]) to every batch element of x [B, T, D].
func addPerPosition(g *autodiff.Graph, x, pos *autodiff.Node) *autodiff.Node {
	xs := x.Shape()
	flat := g.AddBias(g.Reshape(x, []int{xs[0], xs[1] * xs[2]}), pos)
	return g.Reshape(flat, xs)
}

// Sinusoidal returns the fixed sinusoidal position encodings of Vaswani et al. for
// positions offset..offset+t−1 as a [t, dim] row-major slice:
// PE(p, 2i) = sin(p / 10000^(2i/dim)), PE(p, 2i+1) = cos(p / 10000^(2i/dim)).
func Sinusoidal(t, dim, offset int) []float64 {
	pe := make([]float64, t*dim)
	for p := range t {
		for i := 0; i < dim; i += 2 {
			angle := float64(p+offset) / math.Pow(10000, float64(i)/float64(dim))
			pe[p*dim+i] = math.Sin(angle)
			if i+1 < dim {
				pe[p*dim+i+1] = math.Cos(angle)
			}
		}
	}
	return pe
}

// AddSinusoidal returns x [B, T, D] plus the sinusoidal encodings of positions
// offset..offset+T−1 (no parameters).
func AddSinusoidal(g *autodiff.Graph, x *autodiff.Node, offset int) *autodiff.Node {
	if g == nil || g.Err() != nil {
		return nil
	}
	if x == nil || len(x.Shape()) != 3 {
		return g.Fail(fmt.Errorf("sinusoidal positions: input %v, want [B, T, D]", x.Shape()))
	}
	xs := x.Shape()
	return addPerPosition(g, x, g.ConstTensor([]int{xs[1] * xs[2]}, Sinusoidal(xs[1], xs[2], offset)))
}

// AddSinusoidalAt returns x [B, T, D] plus the sinusoidal encodings of the positions
// pos, an int node [T] of values below maxLen (positions as data, see
// LearnedPositions.ForwardAt).
func AddSinusoidalAt(g *autodiff.Graph, x, pos *autodiff.Node, maxLen int) *autodiff.Node {
	if !ready(g, "sinusoidal positions", "", x, pos) {
		return nil
	}
	xs := x.Shape()
	if len(xs) != 3 || !slices.Equal(pos.Shape(), []int{xs[1]}) || maxLen <= 0 {
		return g.Fail(fmt.Errorf("sinusoidal positions: input %v and positions %v below %d, want [B, T, D] and [T]", xs, pos.Shape(), maxLen))
	}
	table := g.ConstTensor([]int{maxLen, xs[2]}, Sinusoidal(maxLen, xs[2], 0))
	return addPerPosition(g, x, g.Reshape(g.Gather(table, pos), []int{xs[1] * xs[2]}))
}

// defaultRotaryBase is RoFormer's θ base.
const defaultRotaryBase = 10000

// ApplyRotary rotates the per-head vectors x [N, T, dh] (dh even) by their positions
// offset..offset+T−1 (rotary position embedding, RoFormer; the "rotate half" layout of
// GPT-NeoX and LLaMA): x·cos + rotate_half(x)·sin with angles p·base^(−2i/dh), i < dh/2.
// Applied to queries and keys, it makes the exponential kernel's score depend on
// relative position only. base 0 means 10000.
func ApplyRotary(g *autodiff.Graph, x *autodiff.Node, offset int, base float64) *autodiff.Node {
	if g == nil || g.Err() != nil {
		return nil
	}
	if x == nil || len(x.Shape()) != 3 || x.Shape()[2]%2 != 0 {
		return g.Fail(fmt.Errorf("rotary positions: input %v, want [N, T, dh] with dh even", x.Shape()))
	}
	return g.Rotary(x, 1, offset, base)
}

// RotaryTables returns ApplyRotary's factors cos and sin, each [n, t, dh] row-major, for
// positions offset..offset+t−1 (the same for each of the n rows); base 0 means 10000.
func RotaryTables(n, t, dh, offset int, base float64) (cos, sin []float64) {
	c, s := autodiff.RotaryFactors(t, dh, offset, base) // [t, dh/2]
	half := dh / 2
	cos = make([]float64, n*t*dh)
	sin = make([]float64, n*t*dh)
	for p := range t {
		for b := range n {
			row := (b*t + p) * dh
			for _, out := range [][2][]float64{{cos, c}, {sin, s}} {
				copy(out[0][row:row+half], out[1][p*half:(p+1)*half])
				copy(out[0][row+half:row+dh], out[1][p*half:(p+1)*half])
			}
		}
	}
	return cos, sin
}

// RotaryAngles are the factors of RotaryTables as graph inputs, [N, T, dh] each: a
// decoding step that takes its positions as data (KernelAttention.AttendRecurrent) runs
// one compiled graph at every position.
type RotaryAngles struct{ Cos, Sin *autodiff.Node }

// rotate returns x·cos + rotate_half(x)·sin for x, cos and sin [N, T, dh].
func rotate(g *autodiff.Graph, x, cos, sin *autodiff.Node) *autodiff.Node {
	if !ready(g, "rotary positions", "", x, cos, sin) {
		return nil
	}
	xs := x.Shape()
	if !slices.Equal(cos.Shape(), xs) || !slices.Equal(sin.Shape(), xs) {
		return g.Fail(fmt.Errorf("rotary positions: factors %v and %v, want the input's shape %v", cos.Shape(), sin.Shape(), xs))
	}
	half := xs[2] / 2
	rot := g.Concat(2, g.Neg(g.Slice(x, 2, half, xs[2])), g.Slice(x, 2, 0, half))
	return g.Add(g.Mul(x, cos), g.Mul(rot, sin))
}
