package quote

import (
	"strings"
	"testing"
)

func TestText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"gaussian", `"gaussian"`},
		{"step-1\x1b]0;pwned\x07\n", `"step-1\x1b]0;pwned\a\n"`},
		{strings.Repeat("a", 20<<20), `"` + strings.Repeat("a", MaxBytes) + `"... (20971520 bytes)`},
		{strings.Repeat("a", MaxBytes-1) + "é" + "b", `"` + strings.Repeat("a", MaxBytes-1) + `"... (66 bytes)`},
	} {
		if got := Text(c.in); got != c.want {
			t.Errorf("Text(%.80q) = %s, want %s", c.in, got, c.want)
		}
	}
}
