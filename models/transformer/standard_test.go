package transformer

import (
	"reflect"
	"strings"
	"testing"

	"github.com/locusml/locus/layers"
)

// TestNonStandardCoversEveryField sets each field of Config in turn, enumerated by
// reflection, to a value other than the standard model's, and checks that NonStandard
// names it exactly when standardFields says the field changes the function PyTorch's
// reference LM computes. A new field fails here until it is classified.
func TestNonStandardCoversEveryField(t *testing.T) {
	base := DefaultConfig(ArchLM, 7, 8)
	if ns := base.NonStandard(); ns != nil {
		t.Fatalf("the default config is non-standard: %v", ns)
	}
	if ns := DefaultConfig(ArchEncoder, 7, 8).NonStandard(); ns != nil {
		t.Fatalf("the default encoder is non-standard: %v", ns)
	}
	typ := reflect.TypeFor[Config]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		class, ok := standardFields[f.Name]
		if !ok {
			t.Errorf("Config.%s is not in standardFields: say whether it changes the function PyTorch's reference LM computes from the weights", f.Name)
		}
		c := base
		v := reflect.ValueOf(&c).Elem().Field(i)
		switch {
		case f.Type == reflect.TypeFor[layers.KernelSpec]():
			v.Set(reflect.ValueOf(layers.MustParseKernelSpec("gaussian")))
		case v.Kind() == reflect.Int:
			v.SetInt(v.Int() + 1)
		case v.Kind() == reflect.Bool:
			v.SetBool(!v.Bool())
		case v.Kind() == reflect.Float64:
			v.SetFloat(v.Float() + 0.1)
		default:
			t.Fatalf("Config.%s: no non-standard value of kind %v in this test", f.Name, v.Kind())
		}
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		ns := c.NonStandard()
		named := len(ns) == 1 && strings.HasPrefix(ns[0], key+" ")
		switch {
		case (ok && class.relevant || !ok) && !named:
			t.Errorf("Config.%s changed: NonStandard() = %q, want one phrase naming %s", f.Name, ns, key)
		case ok && !class.relevant && ns != nil:
			t.Errorf("Config.%s changed (%s): NonStandard() = %q, want nil", f.Name, class.why, ns)
		}
	}
	for name := range standardFields {
		if _, ok := typ.FieldByName(name); !ok {
			t.Errorf("standardFields classifies %s, which Config does not have", name)
		}
	}
}

// TestNonStandardRandomFeatures: the option that the hand-kept list missed (issue 36).
func TestNonStandardRandomFeatures(t *testing.T) {
	c := DefaultConfig(ArchLM, 7, 8)
	c.RandomFeatures = 64
	if ns := c.NonStandard(); len(ns) != 1 || !strings.Contains(ns[0], "random_features 64") {
		t.Errorf("NonStandard() = %q, want random_features 64", ns)
	}
	c = DefaultConfig(ArchLM, 7, 8)
	c.Dropout = 0.1
	if ns := c.NonStandard(); ns != nil {
		t.Errorf("dropout 0.1: NonStandard() = %q, want nil (evaluation ignores dropout)", ns)
	}
}
