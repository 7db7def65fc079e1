package layers

import (
	"fmt"
	"strings"

	"github.com/locusml/locus/internal/quote"
)

// The small choices of a layer configuration (bandwidth mode, activation,
// initialisation, position encoding) are named types whose text form is their name, so
// that configs, flags and checkpoints read them as words.

// enumNames formats v by its index in names.
func enumName[T ~int](names []string, v T) (string, bool) {
	if v < 0 || int(v) >= len(names) {
		return "", false
	}
	return names[v], true
}

// parseEnum returns the value whose name is s, or an error naming what and the valid
// names.
func parseEnum[T ~int](what string, names []string, s string) (T, error) {
	for i, n := range names {
		if n == s {
			return T(i), nil
		}
	}
	return 0, fmt.Errorf("unknown %s %s (valid: %s)", what, quote.Text(s), strings.Join(names, ", "))
}

// marshalEnum is MarshalText for an enumeration.
func marshalEnum[T ~int](what string, names []string, v T) ([]byte, error) {
	n, ok := enumName(names, v)
	if !ok {
		return nil, fmt.Errorf("invalid %s %d", what, int(v))
	}
	return []byte(n), nil
}

// stringEnum is String for an enumeration; typ is the Go type's name.
func stringEnum[T ~int](typ string, names []string, v T) string {
	if n, ok := enumName(names, v); ok {
		return n
	}
	return fmt.Sprintf("%s(%d)", typ, int(v))
}
