package datasets

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Vocab is a byte-level vocabulary: a sorted set of byte values, where byte
// Symbols()[i] has id i.
type Vocab struct {
	symbols []byte
	id      [256]int16 // id of each byte value, -1 if absent
}

// newVocab builds a vocabulary from a strictly increasing list of bytes.
func newVocab(symbols []byte) *Vocab {
	v := &Vocab{symbols: symbols}
	for i := range v.id {
		v.id[i] = -1
	}
	for i, b := range symbols {
		v.id[b] = int16(i)
	}
	return v
}

// ByteVocab returns the vocabulary of all 256 byte values, where id = byte.
func ByteVocab() *Vocab {
	s := make([]byte, 256)
	for i := range s {
		s[i] = byte(i)
	}
	return newVocab(s)
}

// VocabFromText returns the vocabulary of the bytes that occur in text, in increasing
// order. For a text of single-byte characters (ASCII, such as tiny shakespeare) it is
// nanoGPT's character vocabulary, chars = sorted(list(set(data))), with the same ids; a
// UTF-8 character of several bytes is several symbols here, one in nanoGPT.
func VocabFromText(text []byte) *Vocab {
	var seen [256]bool
	for _, b := range text {
		seen[b] = true
	}
	var s []byte
	for i, ok := range seen {
		if ok {
			s = append(s, byte(i))
		}
	}
	return newVocab(s)
}

// String returns the vocabulary as a double-quoted, ASCII-only Go string
// literal of its bytes in id order, e.g. "\n !\"#()ab". VocabFromString
// parses it back.
func (v *Vocab) String() string { return strconv.QuoteToASCII(string(v.symbols)) }

// VocabFromString parses the form written by Vocab.String.
func VocabFromString(s string) (*Vocab, error) {
	raw, err := strconv.Unquote(s)
	if err != nil {
		return nil, fmt.Errorf("parse vocab %.40q: not a quoted string: %w", s, err)
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("parse vocab: empty vocabulary")
	}
	for i := 1; i < len(raw); i++ {
		if raw[i] <= raw[i-1] {
			return nil, fmt.Errorf("parse vocab: bytes not strictly increasing at id %d (%#x after %#x)", i, raw[i], raw[i-1])
		}
	}
	return newVocab([]byte(raw)), nil
}

// MarshalJSON encodes the vocabulary as a JSON string holding String().
func (v *Vocab) MarshalJSON() ([]byte, error) { return json.Marshal(v.String()) }

// UnmarshalJSON decodes the form written by MarshalJSON.
func (v *Vocab) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("parse vocab: %w", err)
	}
	p, err := VocabFromString(s)
	if err != nil {
		return err
	}
	*v = *p
	return nil
}

// Size returns the number of ids.
func (v *Vocab) Size() int { return len(v.symbols) }

// Symbols returns the bytes of the vocabulary in id order. The caller must
// not modify the slice.
func (v *Vocab) Symbols() []byte { return v.symbols }

// Encode returns the ids of the bytes of text; a byte outside the vocabulary
// is an error.
func (v *Vocab) Encode(text []byte) ([]int, error) { return encode[int](v, text) }

// encode is Encode into ids of type T (a corpus keeps uint16 ids: a vocabulary
// holds at most 256 symbols).
func encode[T int | uint16](v *Vocab, text []byte) ([]T, error) {
	ids := make([]T, len(text))
	for i, b := range text {
		id := v.id[b]
		if id < 0 || int(id) >= len(v.symbols) || v.symbols[id] != b { // also guards the zero Vocab
			return nil, fmt.Errorf("encode: byte %q at offset %d is not in the vocabulary", b, i)
		}
		ids[i] = T(id)
	}
	return ids, nil
}

// Decode returns the bytes of ids; an id outside [0, Size) is an error.
func (v *Vocab) Decode(ids []int) ([]byte, error) {
	text := make([]byte, len(ids))
	for i, id := range ids {
		if id < 0 || id >= len(v.symbols) {
			return nil, fmt.Errorf("decode: id %d at offset %d is outside the vocabulary of %d", id, i, len(v.symbols))
		}
		text[i] = v.symbols[id]
	}
	return text, nil
}
