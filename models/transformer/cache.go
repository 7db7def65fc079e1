package transformer

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/layers"
	"gorgonia.org/tensor"
)

// CacheKeys and CacheValues name the key/value cache of layer l's self-attention in
// StepBuilder's graphs: per-head keys and values [B·Heads, Tc, DHead] of the Tc earlier
// positions as inputs, and of all Tc+Tn positions as outputs.
func CacheKeys(l int) string { return fmt.Sprintf("cache.k.%d", l) }

// CacheValues names layer l's cached self-attention values (see CacheKeys).
func CacheValues(l int) string { return fmt.Sprintf("cache.v.%d", l) }

// CrossKeys and CrossValues name the keys and values [B·Heads, Ts, DHead] of the encoder
// output for decoder layer l's cross-attention (encdec): outputs of EncoderBuilder's
// graph, inputs of StepBuilder's.
func CrossKeys(l int) string { return fmt.Sprintf("cross.k.%d", l) }

// CrossValues names layer l's cross-attention values (see CrossKeys).
func CrossValues(l int) string { return fmt.Sprintf("cross.v.%d", l) }

// StepBuilder returns the decode-step graph of a causal LM or of an encdec model's
// decoder. Inputs: InputIDs [B, Tn], the new tokens, at positions Tc..Tc+Tn−1, where Tc
// is the length of the optional cache inputs CacheKeys(l) and CacheValues(l) (none when
// Tc = 0, the prompt's first step); for encdec also CrossKeys(l) and CrossValues(l) from
// EncoderBuilder. Outputs: OutputLogits [B, Vocab], the logits after the last new token,
// and CacheKeys(l), CacheValues(l) over all Tc+Tn positions, the next step's cache.
//
// autodiff compiles one graph per input signature, so each cache length compiles once
// and is reused afterwards.
func (m *Model) StepBuilder() autodiff.Builder {
	return func(g *autodiff.Graph) (autodiff.Outputs, error) {
		cfg := m.Config
		if !cfg.Arch.Decodes() {
			return autodiff.Outputs{}, fmt.Errorf("transformer: decode step: arch %s does not decode", cfg.Arch)
		}
		ids := g.Input(InputIDs)
		if g.Err() != nil {
			return autodiff.Outputs{}, g.Err()
		}
		offset := 0
		if g.HasInput(CacheKeys(0)) {
			if s := g.Input(CacheKeys(0)).Shape(); len(s) == 3 {
				offset = s[1]
			}
		}
		if s := ids.Shape(); len(s) != 2 || offset+s[1] > cfg.MaxLen {
			return autodiff.Outputs{}, fmt.Errorf("transformer: decode step: ids %v after %d cached positions, want [B, Tn] with at most %d positions in all", s, offset, cfg.MaxLen)
		}
		cache := func(l int) (k, v *autodiff.Node) {
			if offset == 0 {
				return nil, nil
			}
			return g.Input(CacheKeys(l)), g.Input(CacheValues(l))
		}
		out := autodiff.Outputs{Values: map[string]*autodiff.Node{}}
		x := m.embed(g, ids, offset)
		var k, v *autodiff.Node
		if cfg.Arch == ArchEncDec {
			for l, b := range m.DecBlocks {
				ck, cv := cache(l)
				x, k, v = b.Step(g, x, ck, cv, g.Input(CrossKeys(l)), g.Input(CrossValues(l)), offset)
				out.Values[CacheKeys(l)], out.Values[CacheValues(l)] = k, v
			}
			if g.Err() == nil {
				tn := ids.Shape()[1]
				x = g.Slice(x, 1, tn-1, tn)
			}
		} else {
			for l, b := range m.Blocks {
				ck, cv := cache(l)
				if l == len(m.Blocks)-1 {
					// Only the last position's logits are read: the last block
					// computes that position alone (and the keys and values of all).
					x, k, v = b.StepLast(g, x, ck, cv, offset)
				} else {
					x, k, v = b.Step(g, x, ck, cv, offset)
				}
				out.Values[CacheKeys(l)], out.Values[CacheValues(l)] = k, v
			}
		}
		if g.Err() != nil {
			return autodiff.Outputs{}, g.Err()
		}
		out.Values[OutputLogits] = m.head(g, x)
		return out, g.Err()
	}
}

// InputCacheMask names the key mask [B, C+1] of WindowStepBuilder's graph: 1 for the
// cache slots that hold earlier tokens and for the new token (the last key), 0 for the
// empty slots.
const InputCacheMask = "cache.mask"

// WindowStepBuilder returns the decode step of a causal LM or of an encdec model's
// decoder over a key/value cache of a fixed capacity C < MaxLen: one new token attends
// over CacheKeys(l) and CacheValues(l), [B·Heads, C, DHead] each, whose last slots hold
// the earlier tokens' keys and values in order (right-aligned: the token before the new
// one in the last slot) and whose other slots InputCacheMask hides. Inputs: InputIDs
// [B, 1]; its position as data (InputPositions [1], or InputRotaryCos and InputRotarySin
// [B·Heads, 1, DHead] for rotary positions); InputCacheMask; the caches; for encdec
// CrossKeys(l) and CrossValues(l). Outputs: OutputLogits [B, Vocab], and CacheKeys(l),
// CacheValues(l) [B·Heads, C+1, DHead], the cache with the new token appended.
//
// The inputs have the same shapes at every position of a context that fits C, so one
// compiled graph serves all of them. Right-aligned, a key's slot is as far from the new
// token's (the last) as its position is from the new token's, so the causal mask,
// windows, hollow kernels and position kernels (functions of the query–key distance) see
// their true distances; the positions themselves are data.
func (m *Model) WindowStepBuilder() autodiff.Builder {
	return func(g *autodiff.Graph) (autodiff.Outputs, error) {
		cfg := m.Config
		if !cfg.Arch.Decodes() || cfg.MaxLen < 2 {
			return autodiff.Outputs{}, fmt.Errorf("transformer: window step: arch %s with max_len %d, want a decoding arch and max_len >= 2", cfg.Arch, cfg.MaxLen)
		}
		ids := g.Input(InputIDs)
		if g.Err() != nil {
			return autodiff.Outputs{}, g.Err()
		}
		if s := ids.Shape(); len(s) != 2 || s[1] != 1 {
			return autodiff.Outputs{}, fmt.Errorf("transformer: window step: ids %v, want [B, 1]", s)
		}
		slots := 0
		if s := g.Input(CacheKeys(0)).Shape(); len(s) == 3 {
			slots = s[1]
		}
		if slots < 1 || slots >= cfg.MaxLen {
			return autodiff.Outputs{}, fmt.Errorf("transformer: window step: a cache of %d positions, want 1 to %d", slots, cfg.MaxLen-1)
		}
		x := m.TokEmb.Forward(g, ids)
		opt := layers.AttendOptions{Offset: slots, KeyMask: g.Input(InputCacheMask)}
		switch cfg.Positions {
		case layers.PositionsLearned:
			x = m.PosEmb.ForwardAt(g, x, g.Input(InputPositions))
		case layers.PositionsSinusoidal:
			x = layers.AddSinusoidalAt(g, x, g.Input(InputPositions), cfg.MaxLen)
		case layers.PositionsRotary:
			opt.Rotary = &layers.RotaryAngles{Cos: g.Input(InputRotaryCos), Sin: g.Input(InputRotarySin)}
		}
		if cfg.Dropout > 0 {
			x = g.Dropout(x, cfg.Dropout)
		}
		out := autodiff.Outputs{Values: map[string]*autodiff.Node{}}
		var k, v *autodiff.Node
		for l := range cfg.Layers {
			ck, cv := g.Input(CacheKeys(l)), g.Input(CacheValues(l))
			if cfg.Arch == ArchEncDec {
				x, k, v = m.DecBlocks[l].StepWith(g, x, ck, cv, g.Input(CrossKeys(l)), g.Input(CrossValues(l)), opt)
			} else {
				x, k, v = m.Blocks[l].StepWith(g, x, ck, cv, opt)
			}
			out.Values[CacheKeys(l)], out.Values[CacheValues(l)] = k, v
		}
		if g.Err() != nil {
			return autodiff.Outputs{}, g.Err()
		}
		out.Values[OutputLogits] = m.head(g, x)
		return out, g.Err()
	}
}

// EncoderBuilder returns the graph that encodes InputSource [B, Ts] once per generation
// for an encdec model: its outputs are each decoder layer's cross-attention keys and
// values, CrossKeys(l) and CrossValues(l).
func (m *Model) EncoderBuilder() autodiff.Builder {
	return func(g *autodiff.Graph) (autodiff.Outputs, error) {
		mem := m.Encode(g, g.Input(InputSource))
		out := autodiff.Outputs{Values: map[string]*autodiff.Node{}}
		for l, b := range m.DecBlocks {
			out.Values[CrossKeys(l)], out.Values[CrossValues(l)] = b.XAttn.KeysValues(g, mem, 0)
		}
		return out, g.Err()
	}
}

// Generator decodes from a causal LM or an encdec model with a key/value cache: each
// step runs the model on the new token only, attending over the cached keys and values
// of the earlier ones. A model on random features (Model.Recurrent) keeps each layer's
// recurrent state instead, of constant size (RecurrentStepBuilder). It keeps its
// compiled graphs, so reuse one Generator for many generations. It is not safe for
// concurrent use.
//
// The key/value cache of a context of t tokens has room for the smallest of 15, 31, 63,
// ..., MaxLen−1 positions that holds t, in one allocation per layer kept for the largest
// size used, and a new token's step is one compiled graph for every position that fits
// that size (WindowStepBuilder): the cache is at most 2·Layers·(MaxLen−1)·Dim values, the
// graphs a few, and what a token allocates does not grow with its index. The prompt, and the window recomputed once the context slides past
// MaxLen, run StepBuilder's graph of their length.
type Generator struct {
	model *Model
	step  *autodiff.Model
	enc   *autodiff.Model // encdec only
	held  int             // values in the cache or state after the last step
	win   *windowCache    // the fixed-size cache; nil for a recurrent model
	// onLogits, when set (tests), sees each step's logits row.
	onLogits func([]float64)
}

// windowCache is a Generator's key/value cache and its one-token step. The cache of a
// context of t tokens has a fixed capacity, the smallest of 15, 31, 63, ... (2^k − 1) and
// MaxLen − 1 that holds t, so that a token's step costs O(t), not O(MaxLen), with one
// compiled graph per capacity (log₂ MaxLen of them at most). Every capacity's buffers
// are views of one allocation per layer, for the largest capacity used so far: at most
// 2·Layers·(MaxLen−1)·Dim values in all.
type windowCache struct {
	step          *autodiff.Model
	dtype         autodiff.Dtype
	layers, heads int
	dh, maxSlots  int // maxSlots = MaxLen − 1
	// keys[l] and values[l] back layer l's caches, heads·big·dh values each; mask
	// backs the step's masks, big+1 values.
	keys, values []*tensor.Dense
	mask         *tensor.Dense
	big          int
	views        map[int]*windowBuffers // by capacity, over the backing of big
	cur          *windowBuffers         // the capacity the cached tokens are in
}

// windowBuffers are the cache of one capacity: keys[l] and values[l] are layer l's
// [Heads, slots, DHead] (one sequence), the tokens so far right-aligned in them
// (WindowStepBuilder), and mask [1, slots+1] the step's InputCacheMask.
type windowBuffers struct {
	keys, values []*tensor.Dense
	mask         *tensor.Dense
	slots        int
}

func newWindowCache(m *Model) *windowCache {
	cfg := m.Config
	return &windowCache{step: autodiff.NewModel(m.Params, m.WindowStepBuilder(), 0), dtype: m.Params.Dtype(),
		layers: cfg.Layers, heads: cfg.Heads, dh: cfg.Dim / cfg.Heads, maxSlots: cfg.MaxLen - 1}
}

// minSlots is the smallest capacity of a windowCache.
const minSlots = 15

// capacity returns the slots that a context of t tokens is kept in (t <= maxSlots).
func (w *windowCache) capacity(t int) int {
	c := minSlots
	for c < t {
		c = 2*c + 1
	}
	return min(c, w.maxSlots)
}

// buffers returns the buffers of capacity slots, allocating the backing anew (and
// dropping the smaller one) when slots exceeds it.
func (w *windowCache) buffers(slots int) *windowBuffers {
	if slots > w.big {
		w.big, w.views = slots, map[int]*windowBuffers{}
		w.keys, w.values = nil, nil
		for range w.layers {
			w.keys = append(w.keys, zeros(w.dtype, w.heads*slots*w.dh))
			w.values = append(w.values, zeros(w.dtype, w.heads*slots*w.dh))
		}
		w.mask = zeros(w.dtype, slots+1)
	}
	if b, ok := w.views[slots]; ok {
		return b
	}
	b := &windowBuffers{slots: slots, mask: prefixView(w.mask, 1, slots+1)}
	for l := range w.layers {
		b.keys = append(b.keys, prefixView(w.keys[l], w.heads, slots, w.dh))
		b.values = append(b.values, prefixView(w.values[l], w.heads, slots, w.dh))
	}
	w.views[slots] = b
	return b
}

// prefixView returns a tensor of the given shape over the first values of t's backing.
func prefixView(t *tensor.Dense, shape ...int) *tensor.Dense {
	n := tensor.Shape(shape).TotalSize()
	if d, ok := t.Data().([]float32); ok {
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(d[:n]))
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(t.Data().([]float64)[:n])) // zeros' other dtype
}

// zeros returns a zero tensor of dtype dt and shape.
func zeros(dt autodiff.Dtype, shape ...int) *tensor.Dense {
	if dt == autodiff.Float32 {
		return tensor.New(tensor.WithShape(shape...), tensor.Of(tensor.Float32))
	}
	return tensor.New(tensor.WithShape(shape...), tensor.Of(tensor.Float64))
}

// held returns the number of values the cache of the current capacity holds: keys and
// values of every layer.
func (w *windowCache) held() int {
	if w.cur == nil {
		return 0
	}
	return 2 * w.layers * w.heads * w.cur.slots * w.dh
}

// store copies the keys and values out [Heads, Tk, DHead] of a step's layers, whose
// last t positions are the context's tokens, into the buffers of t's capacity,
// right-aligned.
func (w *windowCache) store(out map[string]*tensor.Dense, t int) {
	w.cur = w.buffers(w.capacity(t))
	for l := range w.cur.keys {
		placeRight(w.cur.keys[l], out[CacheKeys(l)], w.heads, w.cur.slots)
		placeRight(w.cur.values[l], out[CacheValues(l)], w.heads, w.cur.slots)
	}
}

// inputs sets the step's cache inputs for a context of cached tokens: the buffers and
// a mask that shows the new token (the last key) and the cached ones before it.
func (w *windowCache) inputs(in map[string]*tensor.Dense, cached int) {
	b := w.cur
	switch d := b.mask.Data().(type) {
	case []float32:
		setMaskOf(d, cached)
	case []float64:
		setMaskOf(d, cached)
	}
	in[InputCacheMask] = b.mask
	for l := range b.keys {
		in[CacheKeys(l)], in[CacheValues(l)] = b.keys[l], b.values[l]
	}
}

// placeRight copies the last min(Tk, slots) positions of src [heads, Tk, dh] into the
// last slots of dst [heads, slots, dh], per head.
func placeRight(dst, src *tensor.Dense, heads, slots int) {
	tk := src.Shape()[1]
	switch d := dst.Data().(type) {
	case []float32:
		placeRightOf(d, src.Data().([]float32), heads, slots, tk)
	case []float64:
		placeRightOf(d, src.Data().([]float64), heads, slots, tk)
	}
}

func placeRightOf[F float32 | float64](dst, src []F, heads, slots, tk int) {
	dh := len(dst) / (heads * slots)
	n := min(tk, slots)
	for h := range heads {
		copy(dst[(h*slots+slots-n)*dh:(h+1)*slots*dh], src[(h*tk+tk-n)*dh:(h+1)*tk*dh])
	}
}

// setMaskOf sets m to 1 in its last cached+1 entries, 0 before.
func setMaskOf[F float32 | float64](m []F, cached int) {
	for j := range m {
		m[j] = 0
		if j >= len(m)-1-cached {
			m[j] = 1
		}
	}
}

// NewGenerator returns a cached decoder over m's parameters (shared, not copied: it sees
// later training).
func NewGenerator(m *Model) (*Generator, error) {
	if !m.Config.Arch.Decodes() {
		return nil, fmt.Errorf("generate: arch %s does not decode", m.Config.Arch)
	}
	build := m.StepBuilder()
	if m.Recurrent() {
		build = m.RecurrentStepBuilder()
	}
	gen := &Generator{model: m, step: autodiff.NewModel(m.Params, build, 0)}
	if !m.Recurrent() && m.Config.MaxLen >= 2 {
		gen.win = newWindowCache(m)
	}
	if m.Config.Arch == ArchEncDec {
		gen.enc = autodiff.NewModel(m.Params, m.EncoderBuilder(), 0)
	}
	return gen, nil
}

// Generate continues prompt by up to n tokens, choosing each with s and stopping after the
// token stop (if stop >= 0); src is the source sequence of an encdec model (nil for an
// LM), whose prompt is usually just its start token. It returns the generated tokens
// only, the same tokens as the uncached Generate and GenerateFromSource up to float
// round-off in the logits.
//
// The context is the last MaxLen tokens, as in Generate: while the sequence fits, each
// step feeds one token; once it is longer, positions shift at every step, so each step
// recomputes the window of the last MaxLen tokens. The exception is a recurrent model
// with rotary positions or none, whose state runs on over the whole sequence
// (recurrent.go).
func (gen *Generator) Generate(src, prompt []int, n int, s Sampling, stop int, rng *rand.Rand) ([]int, error) {
	return gen.GenerateContext(context.Background(), src, prompt, n, s, stop, rng)
}

// GenerateContext is Generate that stops with ctx.Err() between tokens once ctx is done.
func (gen *Generator) GenerateContext(ctx context.Context, src, prompt []int, n int, s Sampling, stop int, rng *rand.Rand) ([]int, error) {
	cfg := gen.model.Config
	if err := checkGenerate(cfg, src, prompt, s); err != nil {
		return nil, err
	}
	fixed := map[string]*tensor.Dense{}
	if cfg.Arch == ArchEncDec {
		res, err := gen.enc.Forward(map[string]*tensor.Dense{InputSource: idsTensor(src)})
		if err != nil {
			return nil, fmt.Errorf("generate: encode: %w", err)
		}
		for name, t := range res.Values {
			fixed[name] = t.Clone().(*tensor.Dense)
		}
	}
	seq := append([]int(nil), prompt...)
	pending := seq // tokens not yet in the cache
	cached := 0
	var cache map[string]*tensor.Dense // a recurrent model's state
	var out []int
	row := make([]float64, cfg.Vocab)
	in := map[string]*tensor.Dense{}
	win := gen.win
	for i := range n {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if gen.model.boundedContext() && cached+len(pending) > cfg.MaxLen {
			cache, cached = nil, 0
			pending = seq[len(seq)-cfg.MaxLen:]
		}
		clear(in)
		in[InputIDs] = idsTensor(pending)
		for name, t := range fixed {
			in[name] = t
		}
		// Keep what the step computed for the tokens so far unless no later step reads
		// it: after the last token, or when the next token no longer fits a bounded
		// context and the window is recomputed anyway.
		keep := func() bool { return i < n-1 && (!gen.model.boundedContext() || cached+1 <= cfg.MaxLen) }
		var res *autodiff.Result
		var err error
		if win != nil && cached > 0 { // one new token after the cached ones
			gen.positions(in, cached, 1)
			win.inputs(in, cached)
			if res, err = win.step.Forward(in); err != nil {
				return nil, fmt.Errorf("generate: %w", err)
			}
			cached++
			if keep() {
				win.store(res.Values, cached)
			}
		} else { // the prompt, a recomputed window, or a recurrent model's step
			if gen.model.Recurrent() {
				gen.positions(in, cached, len(pending))
			}
			for name, t := range cache {
				in[name] = t
			}
			if res, err = gen.step.Forward(in); err != nil {
				return nil, fmt.Errorf("generate: %w", err)
			}
			cached += len(pending)
			if win == nil {
				gen.held = 0
				for name, t := range res.Values {
					if name != OutputLogits {
						gen.held += t.Shape().TotalSize()
					}
				}
			}
			switch {
			case win != nil:
				if keep() {
					win.store(res.Values, cached)
				}
			case keep():
				// A copy: the step's outputs are overwritten by its next run.
				if cache == nil {
					cache = map[string]*tensor.Dense{}
				}
				for name, t := range res.Values {
					if name != OutputLogits {
						cache[name] = t.Clone().(*tensor.Dense)
					}
				}
			default:
				cache = nil
			}
		}
		logitsRow(row, res.Values[OutputLogits], 0)
		if gen.onLogits != nil {
			gen.onLogits(row)
		}
		if win != nil {
			gen.held = win.held()
		}
		next := s.Pick(row, rng)
		out = append(out, next)
		seq = append(seq, next)
		pending = seq[len(seq)-1:]
		if next == stop {
			break
		}
	}
	return out, nil
}

// Held returns how many values the generator keeps for the earlier tokens after the last
// generation's last step: with a key/value cache the capacity the context was in,
// 2·Layers·C·Dim for C the smallest of 15, 31, 63, ..., MaxLen−1 that holds it (at most
// 2·Layers·(MaxLen−1)·Dim); for a recurrent model each layer's state of
// Heads·m·(DHead+1) values, whatever the length.
func (gen *Generator) Held() int { return gen.held }

// positions adds the positions offset..offset+tn−1 of a recurrent step's new tokens to
// its inputs in.
func (gen *Generator) positions(in map[string]*tensor.Dense, offset, tn int) {
	cfg := gen.model.Config
	if cfg.Positions == layers.PositionsNone {
		return
	}
	if cfg.Positions == layers.PositionsRotary {
		n, dh := cfg.Heads, cfg.Dim/cfg.Heads // one sequence
		cos, sin := layers.RotaryTables(n, tn, dh, offset, 0)
		in[InputRotaryCos], in[InputRotarySin] = floatTensor(gen.model.Params.Dtype(), cos, n, tn, dh), floatTensor(gen.model.Params.Dtype(), sin, n, tn, dh)
		return
	}
	pos := make([]int, tn)
	for i := range pos {
		pos[i] = offset + i
	}
	in[InputPositions] = tensor.New(tensor.WithShape(tn), tensor.WithBacking(pos))
}

// floatTensor returns vals as a tensor of dtype dt and the given shape.
func floatTensor(dt autodiff.Dtype, vals []float64, shape ...int) *tensor.Dense {
	if dt == autodiff.Float32 {
		f := make([]float32, len(vals))
		for i, v := range vals {
			f[i] = float32(v)
		}
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(f))
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(append([]float64(nil), vals...)))
}

// GenerateCached is NewGenerator(m) followed by Generate(nil, prompt, ...) for a causal
// LM. It compiles the step graphs anew at every call: keep a Generator to reuse them.
func GenerateCached(m *Model, prompt []int, n int, s Sampling, stop int, rng *rand.Rand) ([]int, error) {
	gen, err := NewGenerator(m)
	if err != nil {
		return nil, err
	}
	return gen.Generate(nil, prompt, n, s, stop, rng)
}

// idsTensor returns ids as an int tensor [1, len(ids)].
func idsTensor(ids []int) *tensor.Dense {
	return tensor.New(tensor.WithShape(1, len(ids)), tensor.WithBacking(append([]int(nil), ids...)))
}

// logitsRow copies row r of logits [N, V] into row as float64.
func logitsRow(row []float64, logits *tensor.Dense, r int) {
	v := len(row)
	switch d := logits.Data().(type) {
	case []float32:
		for j := range row {
			row[j] = float64(d[r*v+j])
		}
	case []float64:
		copy(row, d[r*v:(r+1)*v])
	}
}

// checkGenerate validates the arguments of a generation.
func checkGenerate(cfg Config, src, prompt []int, s Sampling) error {
	if err := s.Validate(); err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	if len(prompt) == 0 {
		return fmt.Errorf("generate: empty prompt")
	}
	if err := checkTokens(cfg, "prompt", prompt); err != nil {
		return err
	}
	switch cfg.Arch {
	case ArchLM:
		if src != nil {
			return fmt.Errorf("generate: a source sequence was given to a causal LM")
		}
	case ArchEncDec:
		if len(src) == 0 || len(src) > cfg.MaxLen {
			return fmt.Errorf("generate: source of %d tokens, want 1..%d", len(src), cfg.MaxLen)
		}
		return checkTokens(cfg, "source", src)
	default:
		return fmt.Errorf("generate: arch %s does not decode", cfg.Arch)
	}
	return nil
}

func checkTokens(cfg Config, what string, ids []int) error {
	for i, id := range ids {
		if id < 0 || id >= cfg.Vocab {
			return fmt.Errorf("generate: %s token %d at position %d is outside the vocabulary of %d", what, id, i, cfg.Vocab)
		}
	}
	return nil
}
