package layers

import (
	"strings"
	"testing"
	"time"
)

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

// FuzzParseKernelNested nests the grammar: inner wrapped depth times in groups,
// mixtures or products (chosen by the bits of shape), widened to a mixture of width
// copies. Whatever the sizes, ParseKernel returns quickly with a kernel whose spec
// round-trips or with one short line, never a stack overflow. The seeds are the deep
// nesting and huge mixtures of issue 36.
func FuzzParseKernelNested(f *testing.F) {
	f.Add(uint32(1_000_000), uint32(1), uint8(0), "gaussian")
	f.Add(uint32(1), uint32(100_000), uint8(0), "exponential")
	f.Add(uint32(MaxSpecDepth), uint32(MaxMixtureComponents), uint8(0xaa), "laplacian * window(4)")
	f.Add(uint32(MaxSpecDepth+1), uint32(2), uint8(0x55), "causal")
	f.Add(uint32(200), uint32(3), uint8(0xff), "mixture(cauchy, tricube)")
	f.Fuzz(func(t *testing.T, depth, width uint32, shape uint8, inner string) {
		depth, width = min(depth, 1<<20), min(width, 1<<17) // specs of a few MB at most
		var b strings.Builder
		open := make([]string, depth)
		for i := range open {
			switch (shape >> (i % 8)) & 3 {
			case 0, 1:
				open[i] = "("
			case 2:
				open[i] = "mixture("
			default:
				open[i] = "product(causal, "
			}
			b.WriteString(open[i])
		}
		b.WriteString(inner)
		b.WriteString(strings.Repeat(")", int(depth)))
		spec := b.String()
		if width > 1 {
			spec = "mixture(" + strings.TrimSuffix(strings.Repeat(spec+", ", int(width)), ", ") + ")"
		}
		start := time.Now()
		k, err := ParseKernel(spec)
		if d := time.Since(start); d > time.Second {
			t.Errorf("ParseKernel of %d bytes took %v", len(spec), d)
		}
		if err != nil {
			if msg := err.Error(); strings.Contains(msg, "\n") || len(msg) > 1000 {
				t.Fatalf("error of %d bytes, want one line of at most 1000: %.300q", len(msg), msg)
			}
			return
		}
		again, err := ParseKernel(k.Name())
		if err != nil || again.Name() != k.Name() {
			t.Fatalf("%.200q parses to %.200q, which parses to %v, %v", spec, k.Name(), again, err)
		}
	})
}
