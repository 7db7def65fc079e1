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

func TestName(t *testing.T) {
	long := strings.Repeat("d/", MaxNameBytes)
	for in, want := range map[string]string{
		"runs/reverse-1/corpus.txt": "runs/reverse-1/corpus.txt",
		"dir with spaces/é.txt":     "dir with spaces/é.txt",
		"a\x1b[31mb":                `"a\x1b[31mb"`,
		`quote"d`:                   `"quote\"d"`,
		long:                        Text(long),
	} {
		if got := Name(in); got != want {
			t.Errorf("Name(%.40q) = %.80q, want %.80q", in, got, want)
		}
	}
}
