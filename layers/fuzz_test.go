package layers

import "testing"

// FuzzParseKernel: any text parses to a kernel whose spec parses back to the same spec,
// or to an error, never a panic. The seeds are the README's examples, one per form.
func FuzzParseKernel(f *testing.F) {
	for _, s := range []string{
		"exponential", "gaussian", "laplacian", "cauchy", "epanechnikov", "tricube", "uniform",
		"exponential * causal", "gaussian * window(16)", "exponential * distance(0.1)",
		"exponential * relbias(32)", "laplacian * window(8) * relbias(4)", "product(gaussian, window(16))",
		"mixture(exponential, laplacian)", "mixture(gaussian, cauchy) * (window(8) * relbias(2))",
		"gaussian * windw(8)", "window(1e400)", "((((", "distance(-0)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		k, err := ParseKernel(spec)
		if err != nil {
			return
		}
		again, err := ParseKernel(k.Name())
		if err != nil {
			t.Fatalf("%q parses to %q, which does not parse: %v", spec, k.Name(), err)
		}
		if again.Name() != k.Name() {
			t.Fatalf("%q parses to %q, which parses to %q", spec, k.Name(), again.Name())
		}
	})
}
