package conventions

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/layers"
	"github.com/locusml/locus/models/dae"
	"github.com/locusml/locus/models/transformer"
	"github.com/locusml/locus/optim"
	"github.com/locusml/locus/train"
)

// scanned are the packages whose configs follow the zero convention, relative to the
// module root.
var scanned = []string{"optim", "layers", "datasets", "train", "models/transformer", "models/dae"}

// zeroCheck says what the zero value of a config type does. err returns the error of
// the zero value (from Validate or the constructor), nil when the zero value is
// accepted; then defaults must check that it means the documented defaults.
type zeroCheck struct {
	err      func(t *testing.T) error
	defaults func(t *testing.T)
}

// zeroChecks is the table: every exported struct type of the scanned packages whose
// name ends in Config, every schedule of package optim (a struct with a Factor method)
// and train.Loop. TestZeroConvention fails on a type missing here.
var zeroChecks = map[string]zeroCheck{
	"optim.SGDConfig": {
		err: func(*testing.T) error { return optim.SGDConfig{}.Validate() },
		defaults: func(t *testing.T) {
			o, err := optim.NewSGD(groups(t), optim.SGDConfig{})
			sameConfig(t, o, err, optim.DefaultSGDConfig())
		},
	},
	"optim.AdamConfig": {
		err: func(*testing.T) error { return optim.AdamConfig{}.Validate() },
		defaults: func(t *testing.T) {
			o, err := optim.NewAdam(groups(t), optim.AdamConfig{})
			sameConfig(t, o, err, optim.DefaultAdamConfig())
			w, err := optim.NewAdamW(groups(t), optim.AdamConfig{})
			want := optim.DefaultAdamWConfig()
			want.WeightDecay = 0 // zero is a setting: no decay
			sameConfig(t, &w.Adam, err, want)
		},
	},
	"optim.RMSPropConfig": {
		err: func(*testing.T) error { return optim.RMSPropConfig{}.Validate() },
		defaults: func(t *testing.T) {
			o, err := optim.NewRMSProp(groups(t), optim.RMSPropConfig{})
			sameConfig(t, o, err, optim.DefaultRMSPropConfig())
		},
	},
	"optim.AdagradConfig": {
		err: func(*testing.T) error { return optim.AdagradConfig{}.Validate() },
		defaults: func(t *testing.T) {
			o, err := optim.NewAdagrad(groups(t), optim.AdagradConfig{})
			sameConfig(t, o, err, optim.DefaultAdagradConfig())
		},
	},
	"optim.Constant": {
		err:      func(*testing.T) error { return nil },
		defaults: func(t *testing.T) { constantFactor(t, optim.Constant{}) },
	},
	"optim.Warmup": { // Steps 0: no warm-up; Then nil: Constant
		err:      func(*testing.T) error { return optim.Warmup{}.Validate() },
		defaults: func(t *testing.T) { constantFactor(t, optim.Warmup{}) },
	},
	"optim.Cosine":      {err: func(*testing.T) error { return optim.Cosine{}.Validate() }},
	"optim.LinearDecay": {err: func(*testing.T) error { return optim.LinearDecay{}.Validate() }},
	"optim.StepDecay":   {err: func(*testing.T) error { return optim.StepDecay{}.Validate() }},
	"optim.Exponential": {err: func(*testing.T) error { return optim.Exponential{}.Validate() }},

	"layers.BandwidthConfig": { // fixed at √d_head
		err: func(*testing.T) error { return layers.BandwidthConfig{}.Validate() },
		defaults: func(t *testing.T) {
			ps := params(t)
			a, err := layers.NewKernelAttention(ps.Root().Sub("attn"), layers.AttentionConfig{Dim: 8, Heads: 2})
			if err != nil {
				t.Fatal(err)
			}
			hs := a.Bandwidths()["attn.bandwidth"]
			if len(hs) != 1 || hs[0] != 2 {
				t.Errorf("zero BandwidthConfig, d_head 4: bandwidths %v, want [2] (fixed at √4)", a.Bandwidths())
			}
		},
	},
	"layers.EmbeddingConfig":   {err: func(*testing.T) error { return layers.EmbeddingConfig{}.Validate() }},
	"layers.BlockConfig":       {err: func(*testing.T) error { return layers.BlockConfig{}.Validate() }},
	"layers.FeedForwardConfig": {err: func(*testing.T) error { return layers.FeedForwardConfig{}.Validate() }},
	"layers.NormConfig":        {err: func(*testing.T) error { return layers.NormConfig{}.Validate() }},
	"layers.LinearConfig":      {err: func(*testing.T) error { return layers.LinearConfig{}.Validate() }},
	"layers.AttentionConfig":   {err: func(*testing.T) error { return layers.AttentionConfig{}.Validate() }},
	"layers.PositionsConfig":   {err: func(*testing.T) error { return layers.PositionsConfig{}.Validate() }},

	"datasets.TaskConfig": { // every task's defaults
		err: func(*testing.T) error {
			for _, name := range datasets.TaskNames() {
				if _, err := datasets.TaskByName(name, datasets.TaskConfig{}); err != nil {
					return err
				}
			}
			return nil
		},
		defaults: func(t *testing.T) {
			for _, name := range datasets.TaskNames() {
				task, _ := datasets.TaskByName(name, datasets.TaskConfig{})
				if task.SeqLen() <= 0 || task.Vocab() <= 0 {
					t.Errorf("task %s from a zero TaskConfig: SeqLen %d, Vocab %d", name, task.SeqLen(), task.Vocab())
				}
			}
		},
	},
	"datasets.DenoiseConfig": { // rate 0.15, mode mask
		err: func(t *testing.T) error {
			_, err := datasets.Denoise(baseTask(t), datasets.DenoiseConfig{})
			return err
		},
		defaults: func(t *testing.T) {
			zero, _ := datasets.Denoise(baseTask(t), datasets.DenoiseConfig{})
			want, err := datasets.Denoise(baseTask(t), datasets.DenoiseConfig{Rate: datasets.DefaultCorruptRate, Mode: datasets.DenoiseMask})
			if err != nil {
				t.Fatal(err)
			}
			if zero.AnswerLen() != want.AnswerLen() || zero.Vocab() != want.Vocab() {
				t.Errorf("zero DenoiseConfig: %d corrupted of vocab %d, want %d of %d (rate 0.15, mask)", zero.AnswerLen(), zero.Vocab(), want.AnswerLen(), want.Vocab())
			}
		},
	},
	"datasets.CorpusConfig": { // all files, no cap, ValFraction 0.1
		err: func(t *testing.T) error {
			_, err := datasets.LoadCorpus(corpusFile(t), datasets.CorpusConfig{})
			return err
		},
		defaults: func(t *testing.T) {
			path := corpusFile(t)
			zero, _ := datasets.LoadCorpus(path, datasets.CorpusConfig{})
			want, err := datasets.LoadCorpus(path, datasets.CorpusConfig{ValFraction: 0.1})
			if err != nil {
				t.Fatal(err)
			}
			if len(zero.Val) != len(want.Val) || len(zero.Train) != len(want.Train) {
				t.Errorf("zero CorpusConfig: %d+%d ids, want %d+%d (ValFraction 0.1)", len(zero.Train), len(zero.Val), len(want.Train), len(want.Val))
			}
		},
	},
	"datasets.IteratorConfig": {err: func(*testing.T) error {
		_, err := datasets.NewIterator(datasets.IteratorConfig{})
		return err
	}},

	"train.Loop": {err: func(*testing.T) error {
		_, err := (&train.Loop{}).Run(context.Background())
		return err
	}},

	"transformer.Config":     {err: func(*testing.T) error { return transformer.Config{}.Validate() }},
	"transformer.DataConfig": {err: func(*testing.T) error { return transformer.DataConfig{}.Validate() }},
	"dae.Config":             {err: func(*testing.T) error { return dae.Config{}.Validate() }},
}

// TestZeroConvention checks every config type of the scanned packages against the
// table: a zero value that is refused names one of the type's fields, and one that is
// accepted means the documented defaults.
func TestZeroConvention(t *testing.T) {
	found := configTypes(t)
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range found {
			if !yield(n) {
				return
			}
		}
	}) {
		c, ok := zeroChecks[name]
		if !ok {
			t.Errorf("%s is not in zeroChecks: say what its zero value does (documented defaults, or an error naming a field; see package optim)", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			err := c.err(t)
			switch {
			case err != nil && !namesField(err.Error(), found[name]):
				t.Errorf("zero %s: %q names none of its fields %v", name, err, found[name])
			case err == nil && c.defaults == nil:
				t.Errorf("zero %s is accepted, but the table does not check its defaults", name)
			case err == nil:
				c.defaults(t)
			case c.defaults != nil:
				t.Errorf("zero %s: %v, but the table expects it to mean the defaults", name, err)
			}
		})
	}
	for name := range zeroChecks {
		if _, ok := found[name]; !ok {
			t.Errorf("zeroChecks has %s, which is not an exported config type of %v", name, scanned)
		}
	}
}

// configTypes parses the scanned packages (without tests) and returns their config
// types, "pkg.Type", each with the names of its fields: Go names and JSON keys.
func configTypes(t *testing.T) map[string][]string {
	t.Helper()
	root := filepath.Join("..", "..")
	out := map[string][]string{}
	for _, dir := range scanned {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
		pkgName := ""
		structs := map[string]*ast.StructType{}
		factor := map[string]bool{}
		fset := token.NewFileSet()
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			pkgName = f.Name.Name
			for _, decl := range f.Decls {
				switch d := decl.(type) {
				case *ast.GenDecl:
					for _, spec := range d.Specs {
						if ts, ok := spec.(*ast.TypeSpec); ok && ts.Name.IsExported() {
							if st, ok := ts.Type.(*ast.StructType); ok {
								structs[ts.Name.Name] = st
							}
						}
					}
				case *ast.FuncDecl:
					if d.Recv != nil && d.Name.Name == "Factor" {
						if id, ok := d.Recv.List[0].Type.(*ast.Ident); ok {
							factor[id.Name] = true
						}
					}
				}
			}
		}
		for name, st := range structs {
			if strings.HasSuffix(name, "Config") || (pkgName == "optim" && factor[name]) || (pkgName == "train" && name == "Loop") {
				out[pkgName+"."+name] = fieldNames(st)
			}
		}
	}
	return out
}

// fieldNames returns the Go names and JSON keys of a struct's fields.
func fieldNames(st *ast.StructType) []string {
	var names []string
	for _, f := range st.Fields.List {
		for _, n := range f.Names {
			names = append(names, n.Name)
		}
		if len(f.Names) == 0 { // embedded
			if id, ok := f.Type.(*ast.Ident); ok {
				names = append(names, id.Name)
			}
		}
		if f.Tag != nil {
			tag := reflect.StructTag(strings.Trim(f.Tag.Value, "`"))
			if key, _, _ := strings.Cut(tag.Get("json"), ","); key != "" && key != "-" {
				names = append(names, key, strings.ReplaceAll(key, "_", " "))
			}
		}
	}
	return names
}

// namesField reports whether msg names one of fields as a word (case-insensitive).
func namesField(msg string, fields []string) bool {
	for _, f := range fields {
		if regexp.MustCompile(`(?i)(^|[^\pL\pN_])` + regexp.QuoteMeta(f) + `($|[^\pL\pN_])`).MatchString(msg) {
			return true
		}
	}
	return false
}

func params(t *testing.T) *autodiff.Params {
	t.Helper()
	ps, err := autodiff.NewParams(autodiff.Float32, 1)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

func groups(t *testing.T) []optim.Group {
	t.Helper()
	ps := params(t)
	if _, err := ps.Root().New("w", []int{2}, autodiff.Zeros()); err != nil {
		t.Fatal(err)
	}
	return optim.All(ps.List())
}

// sameConfig checks that an optimizer built from a zero config reports want.
func sameConfig[C any](t *testing.T, o interface{ Config() C }, err error, want C) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if got := o.Config(); !reflect.DeepEqual(got, want) {
		t.Errorf("zero config became %+v, want the defaults %+v", got, want)
	}
}

func constantFactor(t *testing.T, s optim.Schedule) {
	t.Helper()
	for step := range 4 {
		if f := s.Factor(step); f != 1 {
			t.Errorf("zero %T: Factor(%d) = %v, want 1", s, step, f)
		}
	}
}

func baseTask(t *testing.T) datasets.Task {
	t.Helper()
	task, err := datasets.TaskByName("copy", datasets.TaskConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

func corpusFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "text.txt")
	if err := os.WriteFile(path, []byte(strings.Repeat("the quick brown fox jumps over the lazy dog\n", 25)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
