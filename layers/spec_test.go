package layers

import (
	"encoding"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/locusml/locus/autodiff"
)

// specCases are canonical specs and the typed values they denote: every registered form
// appears at least once (TestSpecCoversEveryForm).
var specCases = []struct {
	spec string
	want ContentKernel
}{
	{"exponential", Exponential{}},
	{"gaussian", Gaussian{}},
	{"laplacian", Laplacian{}},
	{"cauchy", Cauchy{}},
	{"epanechnikov", Epanechnikov{}},
	{"uniform", Uniform{}},
	{"causal", Product{Content: Uniform{}, Position: Box{Causal: true}}},
	{"window(16)", Product{Content: Uniform{}, Position: Box{Window: 16}}},
	{"causal * window(4)", Product{Content: Uniform{}, Position: Box{Causal: true, Window: 4}}},
	{"distance(0.1)", Product{Content: Uniform{}, Position: DistancePenalty{Slope: 0.1}}},
	{"relbias(32)", Product{Content: Uniform{}, Position: RelativeBias{MaxDistance: 32}}},
	{"gaussian * window(16)", Product{Content: Gaussian{}, Position: Box{Window: 16}}},
	{"exponential * distance(0.25)", Product{Content: Exponential{}, Position: DistancePenalty{Slope: 0.25}}},
	{"exponential * relbias(8)", Product{Content: Exponential{}, Position: RelativeBias{MaxDistance: 8}}},
	{"mixture(exponential, laplacian)", Mixture{Kernels: []ContentKernel{Exponential{}, Laplacian{}}}},
	{"mixture(gaussian, mixture(cauchy, epanechnikov))", Mixture{Kernels: []ContentKernel{Gaussian{}, Mixture{Kernels: []ContentKernel{Cauchy{}, Epanechnikov{}}}}}},
	{"mixture(gaussian, cauchy) * relbias(4)", Product{Content: Mixture{Kernels: []ContentKernel{Gaussian{}, Cauchy{}}}, Position: RelativeBias{MaxDistance: 4}}},
	{"laplacian * window(8) * relbias(2) * distance(1e-05)", Product{Content: Laplacian{}, Position: PositionProduct{Box{Window: 8}, RelativeBias{MaxDistance: 2}, DistancePenalty{Slope: 1e-5}}}},
}

func TestSpecRoundTrip(t *testing.T) {
	for _, c := range specCases {
		k, err := ParseKernel(c.spec)
		if err != nil {
			t.Errorf("ParseKernel(%q): %v", c.spec, err)
			continue
		}
		if !reflect.DeepEqual(k, c.want) {
			t.Errorf("ParseKernel(%q) = %#v, want %#v", c.spec, k, c.want)
		}
		if got := c.want.Name(); got != c.spec {
			t.Errorf("%#v.Name() = %q, want %q", c.want, got, c.spec)
		}
		// Through KernelSpec's text and JSON forms.
		var s KernelSpec
		if err := s.UnmarshalText([]byte(c.spec)); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(struct{ K KernelSpec }{s})
		if err != nil {
			t.Fatal(err)
		}
		var back struct{ K KernelSpec }
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if !reflect.DeepEqual(back.K.Kernel, c.want) || back.K.String() != c.spec {
			t.Errorf("JSON %s read back as %#v", b, back.K.Kernel)
		}
	}
}

// TestSpecOtherForms checks the non-canonical spellings: the product form, parentheses,
// case, spacing, and boxes that merge.
func TestSpecOtherForms(t *testing.T) {
	for spec, canonical := range map[string]string{
		"product(gaussian, window(16))":            "gaussian * window(16)",
		"window(16)*gaussian":                      "gaussian * window(16)",
		"  Gaussian *(window( 16 ))":               "gaussian * window(16)",
		"window(8) * causal * window(4)":           "causal * window(4)",
		"product(exponential, relbias(3), causal)": "exponential * relbias(3) * causal",
		"(exponential * window(5)) * distance(2)":  "exponential * window(5) * distance(2)",
		"uniform * window(3)":                      "window(3)",
		"exponential * uniform":                    "exponential",
		"mixture(gaussian)":                        "mixture(gaussian)",
		"distance(.5)":                             "distance(0.5)",
		"window(1e1)":                              "window(10)",
	} {
		k, err := ParseKernel(spec)
		if err != nil {
			t.Errorf("ParseKernel(%q): %v", spec, err)
			continue
		}
		if k.Name() != canonical {
			t.Errorf("ParseKernel(%q).Name() = %q, want %q", spec, k.Name(), canonical)
		}
		again, err := ParseKernel(k.Name())
		if err != nil || !reflect.DeepEqual(again, k) {
			t.Errorf("canonical %q does not parse back to the same kernel: %#v, %v", k.Name(), again, err)
		}
	}
}

// TestEveryFormRoundTrips parses every registered form's example and checks that the
// canonical spec reads back to the same kernel, so a new kernel file is covered without
// editing this test.
func TestEveryFormRoundTrips(t *testing.T) {
	for _, f := range KernelForms() {
		if f.Doc == "" || f.Syntax == "" || !strings.Contains(f.Example, f.Name) && f.Name != "product" {
			t.Errorf("form %s: Doc %q, Syntax %q, Example %q", f.Name, f.Doc, f.Syntax, f.Example)
		}
		k, err := ParseKernel(f.Example)
		if err != nil {
			t.Errorf("form %s: example %q: %v", f.Name, f.Example, err)
			continue
		}
		again, err := ParseKernel(k.Name())
		if err != nil || !reflect.DeepEqual(again, k) {
			t.Errorf("form %s: %q -> %q -> %#v, %v", f.Name, f.Example, k.Name(), again, err)
		}
		var spec KernelSpec
		b, _ := KernelSpec{Kernel: k}.MarshalText()
		if err := spec.UnmarshalText(b); err != nil || !reflect.DeepEqual(spec.Kernel, k) {
			t.Errorf("form %s: KernelSpec text %q read back as %#v, %v", f.Name, b, spec.Kernel, err)
		}
	}
}

// TestKernelTypesMarshalText round-trips each kernel type through its own
// MarshalText/UnmarshalText.
func TestKernelTypesMarshalText(t *testing.T) {
	values := []encoding.TextMarshaler{
		Exponential{}, Gaussian{}, Laplacian{}, Cauchy{}, Epanechnikov{}, Uniform{},
		Box{Causal: true}, Box{Window: 3}, Box{Causal: true, Window: 7},
		DistancePenalty{Slope: 0.3}, RelativeBias{MaxDistance: 5},
		Product{Content: Gaussian{}, Position: Box{Window: 2}},
		Mixture{Kernels: []ContentKernel{Gaussian{}, Exponential{}}},
	}
	for _, v := range values {
		b, err := v.MarshalText()
		if err != nil {
			t.Fatalf("%#v: %v", v, err)
		}
		ptr := reflect.New(reflect.TypeOf(v))
		if err := ptr.Interface().(encoding.TextUnmarshaler).UnmarshalText(b); err != nil {
			t.Errorf("%T.UnmarshalText(%q): %v", v, b, err)
			continue
		}
		if got := ptr.Elem().Interface(); !reflect.DeepEqual(got, v) {
			t.Errorf("%T: %q read back as %#v", v, b, got)
		}
	}
	var g Gaussian
	if err := g.UnmarshalText([]byte("laplacian")); err == nil || !strings.Contains(err.Error(), "not a layers.Gaussian") {
		t.Errorf("Gaussian.UnmarshalText(laplacian): %v", err)
	}
}

func TestSpecErrors(t *testing.T) {
	for _, c := range []struct {
		spec   string
		column int
		want   string
	}{
		{"gauss", 1, `unknown kernel "gauss" (valid: `},
		{"gaussian * windw(16)", 12, `unknown kernel "windw"`},
		{"", 1, "want a kernel, got the end"},
		{"gaussian *", 11, "want a kernel"},
		{"exponential + relbias(32)", 13, "'+' is not an operator"},
		{"window", 1, "window takes 1 argument, got 0 (syntax: window(W))"},
		{"window(0)", 8, "window width W = 0"},
		{"window(2.5)", 8, "want an integer"},
		{"window(gaussian)", 8, "want a number"},
		{"window(16", 10, "want ',' or ')'"},
		{"gaussian(3)", 1, "gaussian takes no arguments"},
		{"gaussian * laplacian", 12, "at most one content kernel"},
		{"mixture(gaussian, window(3))", 19, "mixture component 2: window(3) has a position part"},
		{"mixture(2)", 9, "want a kernel"},
		{"distance(-1)", 10, "slope S = -1"},
		{"relbias(1e9)", 9, "max distance M"},
		{"gaussian)", 9, `unexpected ")"`},
		{"gaussian ; x", 10, `unexpected ";"`},
		{"window(1e999)", 8, "bad number"},
		{"(gaussian", 10, "want ')'"},
	} {
		_, err := ParseKernel(c.spec)
		var se *SpecError
		if !errors.As(err, &se) {
			t.Errorf("ParseKernel(%q): error %v, want a *SpecError", c.spec, err)
			continue
		}
		if se.Pos+1 != c.column || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseKernel(%q): %q (column %d), want column %d and %q", c.spec, err, se.Pos+1, c.column, c.want)
		}
	}
	_, err := ParseKernel("gauss")
	for _, name := range KernelNames() {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not list %q", err, name)
		}
	}
}

// TestSpecLearnedParameters checks that the learned parts of a spec become named
// parameters of the attention layer that binds it.
func TestSpecLearnedParameters(t *testing.T) {
	for spec, want := range map[string][]string{
		"mixture(gaussian, exponential)":                 {"attn.kernel.logits"},
		"relbias(3)":                                     {"attn.kernel.position.weight"},
		"mixture(gaussian, cauchy) * relbias(2)":         {"attn.kernel.content.logits", "attn.kernel.position.weight"},
		"gaussian * window(4) * relbias(2) * relbias(1)": {"attn.kernel.position.1.weight", "attn.kernel.position.2.weight"},
		"gaussian * window(4) * distance(0.5)":           nil,
	} {
		ps, err := autodiff.NewParams(autodiff.Float64, 1)
		if err != nil {
			t.Fatal(err)
		}
		_, err = NewKernelAttention(ps.Scope("attn"), AttentionConfig{Dim: 4, Heads: 2, Kernel: MustParseKernelSpec(spec).Kernel})
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		var got []string
		for _, n := range ps.SortedNames() {
			if strings.HasPrefix(n, "attn.kernel.") {
				got = append(got, n)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: kernel parameters %v, want %v", spec, got, want)
		}
	}
}

func TestEnumText(t *testing.T) {
	check := func(v interface {
		encoding.TextMarshaler
		String() string
	}, ptr encoding.TextUnmarshaler, text string) {
		t.Helper()
		b, err := v.MarshalText()
		if err != nil || string(b) != text || v.String() != text {
			t.Errorf("%T: %q, %v; want %q", v, b, err, text)
		}
		if err := ptr.UnmarshalText(b); err != nil {
			t.Errorf("%T.UnmarshalText(%q): %v", ptr, b, err)
		}
		if err := ptr.UnmarshalText([]byte("bogus")); err == nil || !strings.Contains(err.Error(), text) {
			t.Errorf("%T.UnmarshalText(bogus): %v, want an error listing %q", ptr, err, text)
		}
	}
	for i, n := range BandwidthModeNames() {
		var m BandwidthMode
		check(BandwidthMode(i), &m, n)
	}
	for i, n := range ActivationNames() {
		var a Activation
		check(Activation(i), &a, n)
	}
	for i, n := range InitNames() {
		var v Init
		check(Init(i), &v, n)
	}
	for i, n := range PositionEncodingNames() {
		var p PositionEncoding
		check(PositionEncoding(i), &p, n)
	}
	if _, err := BandwidthMode(9).MarshalText(); err == nil {
		t.Error("BandwidthMode(9).MarshalText: no error")
	}
}
