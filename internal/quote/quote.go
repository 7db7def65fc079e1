// Package quote writes text that came from a user or a file into an error message: Go
// quoted, so that control bytes and terminal escape sequences show as escapes instead of
// acting on the terminal, and cut to a short prefix, so that a 20 MB name or kernel spec
// does not fill the screen. Every error that echoes file contents or user text goes
// through Text.
package quote

import (
	"strconv"
	"unicode/utf8"
)

// MaxBytes is how many bytes of the text Text echoes before cutting it.
const MaxBytes = 64

// Text returns s Go quoted (as %q writes it) when it has at most MaxBytes bytes, and
// otherwise its first MaxBytes bytes (cut at a rune boundary) quoted, followed by
// "... (N bytes)".
func Text(s string) string {
	if len(s) <= MaxBytes {
		return strconv.Quote(s)
	}
	cut := MaxBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "... (" + strconv.Itoa(len(s)) + " bytes)"
}

// Name returns s as it is when it is at most MaxNameBytes long and Go quoting would
// change nothing in it (no control character, no byte that is not UTF-8, no quote or
// backslash), and otherwise Text(s): a path or name in a note reads plainly, and a
// hostile one is still escaped and cut.
func Name(s string) string {
	if len(s) <= MaxNameBytes && strconv.Quote(s) == `"`+s+`"` {
		return s
	}
	return Text(s)
}

// MaxNameBytes is the longest text that Name shows unquoted: a long path.
const MaxNameBytes = 256
