package layers

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestSpecLimits: a spec that is too long, too deep or has too many mixture components
// is refused with one short line, quickly, whichever way it arrives (ParseKernel, a
// flag's or config's text, JSON); a spec at the limits parses.
func TestSpecLimits(t *testing.T) {
	mixture := func(n int) string {
		return "mixture(" + strings.TrimSuffix(strings.Repeat("exponential,", n), ",") + ")"
	}
	nested := func(depth int) string {
		return strings.Repeat("(", depth) + "gaussian" + strings.Repeat(")", depth)
	}
	relbiases := strings.Repeat("relbias(1)*", 370) + "exponential" // its canonical form adds spaces
	for _, c := range []struct {
		name, spec, want string
	}{
		{"10^6 parentheses", nested(1_000_000), "2000008 bytes long, want at most 4096"},
		{"mixture of 100000", mixture(100_000), "1200008 bytes long, want at most 4096"},
		{"33 groups", nested(MaxSpecDepth + 1), "parentheses nested deeper than 32"},
		{"33 argument lists", strings.Repeat("mixture(", MaxSpecDepth+1) + "gaussian" + strings.Repeat(")", MaxSpecDepth+1), "parentheses nested deeper than 32"},
		{"65 components", mixture(MaxMixtureComponents + 1), "mixture takes 1 to 64 arguments, got 65"},
		{"long canonical form", relbiases, "canonical form of the spec is 4821 bytes long, want at most 4096"},
		{"20 MB name", strings.Repeat("x", 20<<20), "bytes long, want at most 4096"},
		{"long unknown name", strings.Repeat("y", 4000), `unknown kernel "yyyy`},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			_, err := ParseKernel(c.spec)
			var s KernelSpec
			errText := s.UnmarshalText([]byte(c.spec))
			var v struct{ K KernelSpec }
			b, _ := json.Marshal(map[string]string{"K": c.spec})
			errJSON := json.Unmarshal(b, &v)
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v", d)
			}
			for _, e := range []error{err, errText, errJSON} {
				if e == nil {
					t.Fatalf("accepted")
				}
				msg := e.Error()
				if !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") || len(msg) > 400 {
					t.Errorf("error %.400q: want one line of at most 400 bytes with %q", msg, c.want)
				}
			}
		})
	}
	for _, spec := range []string{nested(MaxSpecDepth), mixture(MaxMixtureComponents), strings.Repeat("mixture(", MaxSpecDepth) + "gaussian" + strings.Repeat(")", MaxSpecDepth)} {
		k, err := ParseKernel(spec)
		if err != nil {
			t.Errorf("at the limits: %v", err)
			continue
		}
		if _, err := ParseKernel(k.Name()); err != nil {
			t.Errorf("the canonical form of a spec at the limits: %v", err)
		}
	}
}
