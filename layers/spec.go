package layers

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/locusml/locus/internal/quote"
)

// The kernel spec language: every kernel, position kernel and combinator has a textual
// form that parses to its typed value and that the value's Name returns (the canonical
// form), so a kernel round-trips through configs, flags and checkpoints as text.
//
//	spec    = factor { "*" factor }          product: log-scores add
//	factor  = name [ "(" arg { "," arg } ")" ] | "(" spec ")"
//	arg     = number | spec
//
// A product holds at most one content kernel and any number of position kernels; box
// factors (causal, window) merge into one box, and a product without a content kernel
// has the uniform content kernel (log K = 0). Each form is registered by the file that
// defines its kernel (RegisterKernel), so a new kernel is one file.

// Limits of the spec language, checked while parsing, before anything is built: far above
// any kernel worth writing, low enough that a spec from a flag, a run file or a checkpoint
// cannot exhaust the stack, the memory or the patience of the parser.
const (
	// MaxSpecLen bounds a spec's length in bytes, as written and in its canonical form
	// (Name), so that every accepted spec's canonical form parses again.
	MaxSpecLen = 4096
	// MaxSpecDepth bounds the nesting of parentheses: groups and argument lists.
	MaxSpecDepth = 32
	// MaxMixtureComponents bounds the components of one mixture(...).
	MaxMixtureComponents = 64
)

// Term is a parsed spec: a ContentKernel or a PositionKernel.
type Term interface {
	Name() string
}

// KernelForm is one form of the kernel spec language.
type KernelForm struct {
	// Name is the form's identifier in specs, e.g. "gaussian" or "window".
	Name string
	// Syntax shows the form with its arguments, e.g. "window(W)"; it equals Name for a
	// form without arguments.
	Syntax string
	// Example is a complete spec using the form, e.g. "gaussian * window(16)"; it equals
	// Name for a form without arguments. Tests round-trip every form's example.
	Example string
	// Doc says in a few words what the form is.
	Doc string
	// MinArgs and MaxArgs bound the number of arguments; MaxArgs < 0 means no bound.
	MinArgs, MaxArgs int
	// Parse builds the typed value from the arguments: a ContentKernel or a PositionKernel.
	Parse func(args []SpecArg) (Term, error)
}

var (
	formsMu sync.RWMutex
	forms   = map[string]KernelForm{}
)

// RegisterKernel adds a form to the spec language. The file that defines a kernel calls
// it from init; it panics on a duplicate or malformed form, which is a programming error.
func RegisterKernel(f KernelForm) {
	formsMu.Lock()
	defer formsMu.Unlock()
	if f.Name == "" || f.Parse == nil || !isIdent(f.Name) {
		panic(fmt.Sprintf("layers: RegisterKernel: malformed form %q", f.Name))
	}
	if _, dup := forms[f.Name]; dup {
		panic(fmt.Sprintf("layers: RegisterKernel: %q registered twice", f.Name))
	}
	if f.Syntax == "" {
		f.Syntax = f.Name
	}
	if f.Example == "" {
		f.Example = f.Name
	}
	forms[f.Name] = f
}

// KernelForms returns the registered forms, sorted by name.
func KernelForms() []KernelForm {
	formsMu.RLock()
	defer formsMu.RUnlock()
	out := make([]KernelForm, 0, len(forms))
	for _, f := range forms {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// KernelNames returns the names of the registered forms, sorted.
func KernelNames() []string {
	fs := KernelForms()
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.Name
	}
	return names
}

func lookupForm(name string) (KernelForm, bool) {
	formsMu.RLock()
	defer formsMu.RUnlock()
	f, ok := forms[name]
	return f, ok
}

// SpecError is a parse error in a kernel spec, at a byte offset.
type SpecError struct {
	Spec string // the whole spec
	Pos  int    // byte offset of the problem in Spec
	Msg  string
}

func (e *SpecError) Error() string {
	return fmt.Sprintf("kernel spec %s: at column %d: %s", quote.Text(e.Spec), e.Pos+1, e.Msg)
}

// SpecArg is one argument of a form: a number or a kernel expression.
type SpecArg struct {
	spec  string
	pos   int
	text  string
	isNum bool
	num   float64
	term  Term
}

// Errorf returns a SpecError at the argument.
func (a SpecArg) Errorf(format string, args ...any) error {
	return &SpecError{Spec: a.spec, Pos: a.pos, Msg: fmt.Sprintf(format, args...)}
}

// Float returns the argument as a number in [lo, hi]; what names it in errors.
func (a SpecArg) Float(what string, lo, hi float64) (float64, error) {
	if !a.isNum {
		return 0, a.Errorf("%s: want a number, got %s", what, quote.Text(a.text))
	}
	if !(a.num >= lo && a.num <= hi) {
		return 0, a.Errorf("%s = %s, want a number in [%g, %g]", what, a.text, lo, hi)
	}
	return a.num, nil
}

// Int returns the argument as an integer in [lo, hi]; what names it in errors.
func (a SpecArg) Int(what string, lo, hi int) (int, error) {
	v, err := a.Float(what, float64(lo), float64(hi))
	if err != nil {
		return 0, err
	}
	if v != math.Trunc(v) {
		return 0, a.Errorf("%s = %s, want an integer", what, a.text)
	}
	return int(v), nil
}

// Content returns the argument as a content kernel without a position part.
func (a SpecArg) Content(what string) (ContentKernel, error) {
	if a.isNum || a.term == nil {
		return nil, a.Errorf("%s: want a kernel, got %s", what, quote.Text(a.text))
	}
	k, ok := a.term.(ContentKernel)
	if _, pos := a.term.(PositionKernel); pos || !ok {
		return nil, a.Errorf("%s: %s has a position part; only content kernels go here", what, a.term.Name())
	}
	return k, nil
}

// Term returns the argument as a kernel expression (content or position).
func (a SpecArg) Term(what string) (Term, error) {
	if a.isNum || a.term == nil {
		return nil, a.Errorf("%s: want a kernel, got %s", what, quote.Text(a.text))
	}
	return a.term, nil
}

// ParseKernel parses a kernel spec into the content kernel that attention and LocalMean
// take: a product with a position part is a Product, and a spec made only of position
// kernels gets the uniform content kernel. Errors give the column and list what is valid.
// A spec longer than MaxSpecLen, nested deeper than MaxSpecDepth or with a mixture of more
// than MaxMixtureComponents is refused.
func ParseKernel(spec string) (ContentKernel, error) {
	if len(spec) > MaxSpecLen {
		return nil, &SpecError{Spec: spec, Msg: fmt.Sprintf("the spec is %d bytes long, want at most %d", len(spec), MaxSpecLen)}
	}
	p := &specParser{spec: spec}
	p.next()
	t, err := p.product()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tokEOF {
		return nil, p.errorf(p.tok.pos, "unexpected %s after a complete kernel%s", p.tok.describe(), plusHint(p.tok))
	}
	k, err := asContent(spec, t)
	if err != nil {
		return nil, err
	}
	if n := len(k.Name()); n > MaxSpecLen {
		return nil, &SpecError{Spec: spec, Msg: fmt.Sprintf("the canonical form of the spec is %d bytes long, want at most %d", n, MaxSpecLen)}
	}
	return k, nil
}

// asContent turns a term into a content kernel: a lone position kernel becomes the
// product of the uniform kernel and itself.
func asContent(spec string, t Term) (ContentKernel, error) {
	if _, isProduct := t.(Product); !isProduct {
		if pk, ok := t.(PositionKernel); ok {
			return Product{Content: Uniform{}, Position: pk}, nil
		}
	}
	if k, ok := t.(ContentKernel); ok {
		return k, nil
	}
	return nil, &SpecError{Spec: spec, Msg: fmt.Sprintf("%s (%T) is neither a content nor a position kernel", t.Name(), t)}
}

// formatArgs writes a form with arguments, e.g. "window(16)".
func formatArgs(name string, args ...any) string {
	parts := make([]string, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case float64:
			parts[i] = strconv.FormatFloat(v, 'g', -1, 64)
		case string:
			parts[i] = v
		default:
			parts[i] = fmt.Sprint(v)
		}
	}
	return name + "(" + strings.Join(parts, ", ") + ")"
}

// unmarshalTerm parses b into *dst, for the UnmarshalText methods of the kernel types:
// the spec must denote a value of dst's type.
func unmarshalTerm[T Term](b []byte, dst *T) error {
	k, err := ParseKernel(string(b))
	if err != nil {
		return err
	}
	var t Term = k
	if p, ok := k.(Product); ok {
		if _, uniform := p.Content.(Uniform); uniform && p.Position != nil {
			if v, ok := p.Position.(T); ok { // a lone position kernel
				*dst = v
				return nil
			}
		}
	}
	v, ok := t.(T)
	if !ok {
		var zero T
		return fmt.Errorf("kernel spec %s is %s, not a %T", quote.Text(string(b)), quote.Text(k.Name()), zero)
	}
	*dst = v
	return nil
}

// KernelSpec is a kernel as a configuration value: it holds the typed, unbound kernel and
// reads and writes the spec text (flags, JSON, checkpoints). The zero value is the
// exponential kernel, standard attention's.
type KernelSpec struct {
	Kernel ContentKernel
}

// MustParseKernelSpec is ParseKernel for specs known to be valid (tests, defaults); it
// panics on an error.
func MustParseKernelSpec(spec string) KernelSpec {
	k, err := ParseKernel(spec)
	if err != nil {
		panic(err)
	}
	return KernelSpec{Kernel: k}
}

// Value returns the kernel, Exponential{} for the zero spec.
func (s KernelSpec) Value() ContentKernel {
	if s.Kernel == nil {
		return Exponential{}
	}
	return s.Kernel
}

// String returns the canonical spec.
func (s KernelSpec) String() string { return s.Value().Name() }

// MarshalText returns the canonical spec.
func (s KernelSpec) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText parses a spec.
func (s *KernelSpec) UnmarshalText(b []byte) error {
	k, err := ParseKernel(string(b))
	if err != nil {
		return err
	}
	s.Kernel = k
	return nil
}

// ---- the parser ----

type tokKind int

const (
	tokEOF tokKind = iota
	tokIdent
	tokNumber
	tokLParen
	tokRParen
	tokComma
	tokStar
	tokBad
)

type token struct {
	kind tokKind
	pos  int
	text string
}

func (t token) describe() string {
	switch t.kind {
	case tokEOF:
		return "end of spec"
	case tokIdent:
		return fmt.Sprintf("name %s", quote.Text(t.text))
	case tokNumber:
		if len(t.text) > quote.MaxBytes { // a digit string of any length: cut as Text cuts
			return fmt.Sprintf("number %s", quote.Text(t.text))
		}
		return fmt.Sprintf("number %s", t.text)
	}
	return quote.Text(t.text)
}

type specParser struct {
	spec  string
	off   int
	tok   token
	depth int // open parentheses, groups and argument lists
}

// open enters a parenthesis at pos, refusing to nest deeper than MaxSpecDepth.
func (p *specParser) open(pos int) error {
	if p.depth++; p.depth > MaxSpecDepth {
		return p.errorf(pos, "parentheses nested deeper than %d", MaxSpecDepth)
	}
	return nil
}

func (p *specParser) errorf(pos int, format string, args ...any) error {
	return &SpecError{Spec: p.spec, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isIdent(s string) bool {
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

func (p *specParser) next() {
	s := p.spec
	for p.off < len(s) && (s[p.off] == ' ' || s[p.off] == '\t') {
		p.off++
	}
	start := p.off
	if p.off >= len(s) {
		p.tok = token{kind: tokEOF, pos: start}
		return
	}
	c := s[p.off]
	switch {
	case c == '(' || c == ')' || c == ',' || c == '*':
		p.off++
		kind := map[byte]tokKind{'(': tokLParen, ')': tokRParen, ',': tokComma, '*': tokStar}[c]
		p.tok = token{kind: kind, pos: start, text: string(c)}
	case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_':
		for p.off < len(s) && isIdentByte(s[p.off]) {
			p.off++
		}
		p.tok = token{kind: tokIdent, pos: start, text: s[start:p.off]}
	case c >= '0' && c <= '9' || c == '.' || c == '-':
		p.off++
		for p.off < len(s) {
			d := s[p.off]
			if d >= '0' && d <= '9' || d == '.' || d == 'e' || d == 'E' ||
				(d == '-' || d == '+') && (s[p.off-1] == 'e' || s[p.off-1] == 'E') {
				p.off++
				continue
			}
			break
		}
		p.tok = token{kind: tokNumber, pos: start, text: s[start:p.off]}
	default:
		p.off++
		p.tok = token{kind: tokBad, pos: start, text: string(c)}
	}
}

// product parses factor { "*" factor } and combines the factors.
func (p *specParser) product() (Term, error) {
	var factors []Term
	var positions []int
	for {
		pos := p.tok.pos
		f, err := p.factor()
		if err != nil {
			return nil, err
		}
		factors, positions = append(factors, f), append(positions, pos)
		if p.tok.kind != tokStar {
			break
		}
		p.next()
	}
	if len(factors) == 1 {
		return factors[0], nil
	}
	return combine(factors, func(i int, format string, args ...any) error {
		return p.errorf(positions[i], format, args...)
	})
}

// combine builds the product of factors: one content kernel (uniform if none) and the
// position kernels, with box factors merged into the first box. errAt reports an error
// at factor i.
func combine(factors []Term, errAt func(i int, format string, args ...any) error) (Term, error) {
	var content ContentKernel
	var pks []PositionKernel
	addPosition := func(pk PositionKernel) {
		if b, ok := pk.(Box); ok {
			for i, q := range pks {
				if qb, ok := q.(Box); ok {
					pks[i] = qb.merge(b)
					return
				}
			}
		}
		pks = append(pks, pk)
	}
	for i, f := range factors {
		parts := []Term{f}
		if prod, ok := f.(Product); ok {
			parts = []Term{prod.Content}
			for _, pk := range positionFactors(prod) {
				parts = append(parts, pk)
			}
		}
		for _, part := range parts {
			switch t := part.(type) {
			case PositionKernel:
				addPosition(t)
			case Uniform, nil:
			case ContentKernel:
				if content != nil {
					return nil, errAt(i, "a product holds at most one content kernel, got %s and %s (combine content kernels with mixture(...))", content.Name(), t.Name())
				}
				content = t
			default:
				return nil, errAt(i, "%s (%T) is neither a content nor a position kernel", t.Name(), t)
			}
		}
	}
	if content == nil {
		content = Uniform{}
	}
	switch len(pks) {
	case 0:
		return content, nil
	case 1:
		return Product{Content: content, Position: pks[0]}, nil
	}
	return Product{Content: content, Position: PositionProduct(pks)}, nil
}

func (p *specParser) factor() (Term, error) {
	switch p.tok.kind {
	case tokLParen:
		if err := p.open(p.tok.pos); err != nil {
			return nil, err
		}
		p.next()
		t, err := p.product()
		if err != nil {
			return nil, err
		}
		if p.tok.kind != tokRParen {
			return nil, p.errorf(p.tok.pos, "want ')', got %s", p.tok.describe())
		}
		p.depth--
		p.next()
		return t, nil
	case tokIdent:
	case tokEOF:
		return nil, p.errorf(p.tok.pos, "want a kernel, got the end of the spec (valid kernels: %s)", strings.Join(KernelNames(), ", "))
	default:
		return nil, p.errorf(p.tok.pos, "want a kernel, got %s%s (valid kernels: %s)", p.tok.describe(), plusHint(p.tok), strings.Join(KernelNames(), ", "))
	}
	name, pos := p.tok.text, p.tok.pos
	form, ok := lookupForm(strings.ToLower(name))
	if !ok {
		return nil, p.errorf(pos, "unknown kernel %s (valid: %s)", quote.Text(name), strings.Join(KernelNames(), ", "))
	}
	p.next()
	var args []SpecArg
	if p.tok.kind == tokLParen {
		if err := p.open(p.tok.pos); err != nil {
			return nil, err
		}
		p.next()
		for {
			a, err := p.arg()
			if err != nil {
				return nil, err
			}
			args = append(args, a)
			if p.tok.kind == tokComma {
				p.next()
				continue
			}
			if p.tok.kind != tokRParen {
				return nil, p.errorf(p.tok.pos, "want ',' or ')' in %s, got %s", form.Syntax, p.tok.describe())
			}
			p.depth--
			p.next()
			break
		}
	}
	if len(args) < form.MinArgs || form.MaxArgs >= 0 && len(args) > form.MaxArgs {
		return nil, p.errorf(pos, "%s takes %s, got %d (syntax: %s)", form.Name, arity(form), len(args), form.Syntax)
	}
	t, err := form.Parse(args)
	if err != nil {
		var se *SpecError
		if errors.As(err, &se) {
			return nil, err
		}
		return nil, p.errorf(pos, "%s: %v", form.Name, err)
	}
	return t, nil
}

// plusHint explains a '+', which users may write for a product of kernels.
func plusHint(t token) string {
	if t.text == "+" {
		return " ('+' is not an operator: kernels combine by product '*', where log-scores add, or by mixture(...))"
	}
	return ""
}

func arity(f KernelForm) string {
	plural := func(n int) string {
		if n == 1 {
			return "1 argument"
		}
		return fmt.Sprintf("%d arguments", n)
	}
	switch {
	case f.MaxArgs == 0:
		return "no arguments"
	case f.MaxArgs < 0:
		return "at least " + plural(f.MinArgs)
	case f.MinArgs == f.MaxArgs:
		return plural(f.MinArgs)
	}
	return fmt.Sprintf("%d to %d arguments", f.MinArgs, f.MaxArgs)
}

func (p *specParser) arg() (SpecArg, error) {
	start := p.tok.pos
	a := SpecArg{spec: p.spec, pos: start}
	if p.tok.kind == tokNumber {
		v, err := strconv.ParseFloat(p.tok.text, 64)
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
			return a, p.errorf(start, "bad number %s", quote.Text(p.tok.text))
		}
		a.isNum, a.num, a.text = true, v, p.tok.text
		p.next()
		return a, nil
	}
	t, err := p.product()
	if err != nil {
		return a, err
	}
	a.term, a.text = t, strings.TrimSpace(p.spec[start:p.tok.pos])
	return a, nil
}
