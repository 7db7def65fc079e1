package cli

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"

	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/layers"
	"github.com/locusml/locus/models/dae"
	"github.com/locusml/locus/models/transformer"
)

// attentionMap is the local-mean weights of one attention layer and head for one input,
// as the model's forward pass computed them (layers.TapWeights).
type attentionMap struct {
	Layer   string      `json:"layer"` // the layer's scope, e.g. "blocks.0.attn"
	Head    int         `json:"head"`
	Queries []string    `json:"queries"` // labels of the query positions
	Keys    []string    `json:"keys"`    // labels of the key positions
	Weights [][]float64 `json:"weights"` // [query][key], each visible row sums to 1
	Visible [][]bool    `json:"visible"` // false where the box kernel or padding hides the key
}

// attentionView is what inspect -attention draws for one input.
type attentionView struct {
	Input string         `json:"input"` // the input, as text
	Maps  []attentionMap `json:"maps"`
	// Bandwidths are the per-query bandwidths of the query and knn modes by layer,
	// [head][query].
	Bandwidths map[string][][]float64 `json:"bandwidths,omitempty"`
	// images are the DAE's input and prototypes, drawn beside its maps; nil otherwise.
	images *daeImages
}

// daeImages are the pictures of a localized DAE's attention view.
type daeImages struct {
	clean, noisy, denoised []float32
	prototypes             [][][]float32 // [level][prototype] decoded images
}

// attentionSession is a session whose local means inspect -attention can draw.
type attentionSession interface {
	// attention runs the model on one input, given as text (input) or as the example-th
	// validation example, with taps, and returns the weights of every layer and head.
	attention(m *autodiff.Model, input string, example int) (*attentionView, error)
}

// AttentionSession is a Session whose local means inspect -attention and the report can
// draw: it gives the model's inputs for one example, and the weights are read from the
// forward pass's taps (layers.TapWeights and layers.TapVisible, which every kernel
// attention layer of package layers records).
type AttentionSession interface {
	// AttentionInput returns the inputs of one example: input, as text, when it is not
	// empty, else the example-th validation example (0 to 999).
	AttentionInput(input string, example int) (*AttentionInput, error)
}

// AttentionInput is one example to draw the attention of.
type AttentionInput struct {
	Text   string                   // the example as shown in the picture's title
	Inputs map[string]*tensor.Dense // the model's inputs, batch size 1
	// Labels returns the labels of the queries and keys of an attention layer, by its
	// scope (the scope the layer's taps are recorded under, e.g. "attn").
	Labels func(layer string) (queries, keys []string)
}

var (
	_ attentionSession = (*transformerSession)(nil)
	_ attentionSession = (*daeSession)(nil)
)

// attentionOf returns the attention a session can draw: the built-in families' own,
// or an AttentionSession's.
func attentionOf(s Session) (attentionSession, bool) {
	switch s := s.(type) {
	case attentionSession:
		return s, true
	case AttentionSession:
		return userAttention{s}, true
	}
	return nil, false
}

type userAttention struct{ AttentionSession }

func (u userAttention) attention(m *autodiff.Model, input string, example int) (*attentionView, error) {
	in, err := u.AttentionInput(input, example)
	if err != nil {
		return nil, err
	}
	view, err := tapped(m, in.Inputs, in.Labels)
	if err != nil {
		return nil, err
	}
	view.Input = in.Text
	return view, nil
}

// tapped runs m on inputs with taps and collects the maps of every attention layer;
// labels gives the query and key labels of a layer (by its scope).
func tapped(m *autodiff.Model, inputs map[string]*tensor.Dense, labels func(layer string) (q, k []string)) (*attentionView, error) {
	res, err := m.Run(inputs, autodiff.RunMode{Taps: true})
	if err != nil {
		return nil, err
	}
	view := &attentionView{Bandwidths: map[string][][]float64{}}
	var names []string
	for name := range res.Taps {
		if strings.HasSuffix(baseTap(name), "."+layers.TapWeights) {
			names = append(names, name)
		}
	}
	rank := func(name string) int { // the encoder before the decoder
		if strings.HasPrefix(name, "dec.") {
			return 1
		}
		return 0
	}
	sort.Slice(names, func(i, j int) bool {
		if a, b := rank(names[i]), rank(names[j]); a != b {
			return a < b
		}
		return naturalLess(names[i], names[j])
	})
	for _, name := range names {
		layer := strings.TrimSuffix(baseTap(name), "."+layers.TapWeights)
		suffix := strings.TrimPrefix(name, baseTap(name))
		w, vis := res.Taps[name], res.Taps[layer+"."+layers.TapVisible+suffix]
		if vis == nil {
			return nil, fmt.Errorf("layer %s: weights without visibility", layer)
		}
		s := w.Shape() // [B, H, Tq, Tk]; the first batch row is the input
		if len(s) != 4 {
			return nil, fmt.Errorf("layer %s: weights of shape %v, want [B, H, Tq, Tk]", layer, s)
		}
		q, k := labels(layer)
		if len(q) != s[2] || len(k) != s[3] {
			return nil, fmt.Errorf("layer %s: weights %v for %d queries and %d keys", layer, s, len(q), len(k))
		}
		wd, vd := floats(w), floats(vis)
		for h := range s[1] {
			am := attentionMap{Layer: layer + suffix, Head: h, Queries: q, Keys: k}
			for t := range s[2] {
				off := (h*s[2] + t) * s[3]
				row := make([]float64, s[3])
				vrow := make([]bool, s[3])
				for j := range row {
					row[j] = wd[off+j]
					vrow[j] = vd[off+j] != 0
				}
				am.Weights = append(am.Weights, row)
				am.Visible = append(am.Visible, vrow)
			}
			view.Maps = append(view.Maps, am)
		}
		if bw := res.Taps[layer+"."+layers.TapBandwidth+suffix]; bw != nil {
			bs, bd := bw.Shape(), floats(bw) // [B, H, Tq]
			per := make([][]float64, bs[1])
			for h := range per {
				per[h] = bd[h*bs[2] : (h+1)*bs[2]]
			}
			view.Bandwidths[layer+suffix] = per
		}
	}
	if len(view.Maps) == 0 {
		return nil, fmt.Errorf("the model has no attention layer to show")
	}
	return view, nil
}

// baseTap strips the "#2" that a second tap of the same name gets.
func baseTap(name string) string {
	if i := strings.LastIndexByte(name, '#'); i >= 0 {
		return name[:i]
	}
	return name
}

// floats returns a tensor's values as float64.
func floats(t *tensor.Dense) []float64 {
	switch d := t.Data().(type) {
	case []float32:
		out := make([]float64, len(d))
		for i, v := range d {
			out[i] = float64(v)
		}
		return out
	case []float64:
		return d
	}
	return nil
}

// exampleSeed draws the examples of inspect -example: the eval command's default seed.
const (
	exampleSeed  = 12345
	exampleCount = 1000 // -example takes 0..exampleCount−1 of a generated task
)

func (s *transformerSession) attention(m *autodiff.Model, input string, example int) (*attentionView, error) {
	if s.data == nil {
		return nil, errNoData("drawing attention (its tokens need the task or vocabulary)")
	}
	ids, err := s.attentionIDs(input, example)
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, usageErrorf("-input must not be empty")
	}
	if len(ids) > s.cfg.MaxLen {
		return nil, usageErrorf("the input has %d tokens, more than the model's %d", len(ids), s.cfg.MaxLen)
	}
	toks := s.tokenLabels(ids)
	row := func(x []int) *tensor.Dense {
		return tensor.New(tensor.WithShape(1, len(x)), tensor.WithBacking(append([]int(nil), x...)))
	}
	inputs := map[string]*tensor.Dense{transformer.InputIDs: row(ids)}
	labels := func(string) ([]string, []string) { return toks, toks }
	if s.cfg.Arch == transformer.ArchEncDec {
		// The decoder reads the start token and the model's own greedy answer.
		bos := s.data.Task.Vocab()
		ans, err := transformer.GenerateFromSource(m, s.cfg, ids, []int{bos}, s.data.Task.AnswerLen(), transformer.Sampling{}, -1, rand.New(rand.NewPCG(1, 0)))
		if err != nil {
			return nil, err
		}
		dec := append([]int{bos}, ans[:len(ans)-1]...)
		decToks := append([]string{"<s>"}, s.tokenLabels(dec[1:])...)
		inputs[transformer.InputSource], inputs[transformer.InputIDs] = row(ids), row(dec)
		labels = func(layer string) ([]string, []string) {
			switch {
			case strings.HasPrefix(layer, "enc."):
				return toks, toks
			case strings.HasSuffix(layer, ".xattn"):
				return decToks, toks
			}
			return decToks, decToks
		}
	}
	view, err := tapped(m, inputs, labels)
	if err != nil {
		return nil, err
	}
	view.Input = strings.Join(toks, " ")
	if c := s.data.Corpus; c != nil {
		text, _ := c.Vocab.Decode(ids)
		view.Input = strconv.Quote(string(text))
	}
	return view, nil
}

// attentionIDs returns the token ids of -input (characters of a corpus; token ids
// separated by spaces or commas for a task) or of the example-th validation example.
func (s *transformerSession) attentionIDs(input string, example int) ([]int, error) {
	if c := s.data.Corpus; c != nil {
		if example >= 0 {
			t := min(s.data.Config.SeqLen, s.cfg.MaxLen)
			if n := len(c.Val) / t; example >= n {
				return nil, usageErrorf("-example %d is out of range: the validation text has %d windows of %d characters (0..%d)", example, n, t, n-1)
			}
			return datasets.Ints(c.Val[example*t : (example+1)*t]), nil
		}
		ids, err := c.Vocab.Encode([]byte(input))
		if err != nil {
			return nil, usageErrorf("-input: %v", err)
		}
		return ids, nil
	}
	task := s.data.Task
	if example >= 0 {
		if example >= exampleCount {
			return nil, usageErrorf("-example %d is out of range 0..%d", example, exampleCount-1)
		}
		st, err := datasets.NewTaskStream(task, s.data.Config.Layout, 1, exampleSeed)
		if err != nil {
			return nil, err
		}
		var b datasets.Batch
		for range example + 1 {
			b = st.Next()
		}
		return b.Inputs, nil
	}
	fields := strings.FieldsFunc(input, func(r rune) bool { return r == ' ' || r == ',' })
	ids := make([]int, len(fields))
	for i, f := range fields {
		id, err := strconv.Atoi(f)
		if err != nil || id < 0 || id >= task.Vocab() {
			return nil, usageErrorf("-input: token %q at position %d is not a symbol of task %s (token ids 0..%d, separated by spaces)", f, i, task.Name(), task.Vocab()-1)
		}
		ids[i] = id
	}
	return ids, nil
}

// tokenLabels returns the axis labels of ids: characters for a corpus (whitespace made
// visible), token ids for a task.
func (s *transformerSession) tokenLabels(ids []int) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		if c := s.data.Corpus; c != nil {
			b, _ := c.Vocab.Decode([]int{id})
			out[i] = charLabel(b)
			continue
		}
		out[i] = strconv.Itoa(id)
	}
	return out
}

// charLabel shows a character on an axis: whitespace and control bytes as escapes.
func charLabel(b []byte) string {
	switch s := string(b); s {
	case " ":
		return "·"
	case "\n":
		return `\n`
	case "\t":
		return `\t`
	default:
		if len(b) == 1 && (b[0] < 0x20 || b[0] >= 0x7f) {
			return fmt.Sprintf(`\x%02x`, b[0])
		}
		return s
	}
}

// attention of a localized DAE: the weights of one noisy test image over every level's
// prototypes.
func (s *daeSession) attention(m *autodiff.Model, input string, example int) (*attentionView, error) {
	if s.cfg.Kind != dae.KindLocalized {
		return nil, fmt.Errorf("the MLP DAE has no local means to draw (train -model ldae)")
	}
	if input != "" {
		return nil, usageErrorf("-input is for sequence models; a DAE takes -example N (a test image)")
	}
	if s.mnist == nil {
		return nil, errNoData("drawing attention (the images come from the test set)")
	}
	imgs := s.mnist.Test
	if example < 0 || example >= imgs.N {
		return nil, usageErrorf("-example %d is out of range: the test set has %d images (0..%d)", example, imgs.N, imgs.N-1)
	}
	dim := s.model.Dim()
	clean := imgs.Pixels[example*dim : (example+1)*dim]
	noisy := make([]float32, dim)
	s.model.Noise().Corrupt(noisy, clean, datasets.NewRand(exampleSeed+uint64(example)))
	in := map[string]*tensor.Dense{"noisy": tensor.New(tensor.WithShape(1, dim), tensor.WithBacking(append([]float32(nil), noisy...)))}
	protos := make([]string, s.cfg.Prototypes)
	for i := range protos {
		protos[i] = strconv.Itoa(i)
	}
	view, err := tapped(m, in, func(string) ([]string, []string) { return []string{"image"}, protos })
	if err != nil {
		return nil, err
	}
	den := make([]float32, dim)
	if err := s.model.Denoise(den, noisy); err != nil {
		return nil, err
	}
	im := &daeImages{clean: clean, noisy: noisy, denoised: den}
	for l := range s.model.Levels() {
		p, err := s.model.DecodedPrototypes(l)
		if err != nil {
			return nil, err
		}
		im.prototypes = append(im.prototypes, p)
	}
	view.images = im
	view.Input = fmt.Sprintf("test image %d with %s noise", example, s.cfg.Noise)
	return view, nil
}
