// Package jsonkeys reads JSON objects whose keys changed from Go field names ("SeqLen",
// what encoding/json writes for a field without a tag) to the snake_case of the field's
// tag ("seq_len"), so that checkpoints and run files written before the change still
// load. A type adopts it with
//
//	func (c *T) UnmarshalJSON(b []byte) error {
//		type plain T // without this method
//		return jsonkeys.Unmarshal(b, (*plain)(c))
//	}
//
// and jsonkeys.Register[T]() in an init, so that key checkers (Registered) know that
// its keys are its fields'.
package jsonkeys

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// Unmarshal decodes the JSON object data into v, a pointer to a struct: a key that is
// not one of the struct's tag names but is one of its Go field names (in any case) is
// read as that field. A key that is neither is an error, as with
// json.Decoder.DisallowUnknownFields: a misspelt key is not a silent default.
func Unmarshal(data []byte, v any) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		return json.Unmarshal(data, v) // null, or not an object: the decoder's own error
	}
	t := reflect.TypeOf(v).Elem()
	tags, old := Keys(t)
	renamed := make(map[string]json.RawMessage, len(m))
	for k, val := range m {
		if !tags[k] {
			for goName, tag := range old {
				if strings.EqualFold(k, goName) {
					k = tag
					break
				}
			}
		}
		renamed[k] = val
	}
	b, err := json.Marshal(renamed)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// Field is one JSON key of a struct type: the key, the Go name of its field and the
// field's type.
type Field struct {
	Key, GoName string
	Type        reflect.Type
}

// Fields returns the JSON keys of the struct type t as encoding/json sees them: the
// fields' tag names, or Go names where untagged, embedded structs' fields included,
// unexported and "-" fields left out.
func Fields(t reflect.Type) []Field {
	var out []Field
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, Fields(f.Type)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, Field{Key: name, GoName: f.Name, Type: f.Type})
	}
	return out
}

// Keys returns the JSON keys of the struct type t (Fields) and, for each field, its Go
// name mapped to its key.
func Keys(t reflect.Type) (keys map[string]bool, goNames map[string]string) {
	keys, goNames = map[string]bool{}, map[string]string{}
	for _, f := range Fields(t) {
		keys[f.Key], goNames[f.GoName] = true, f.Key
	}
	return keys, goNames
}

var registered sync.Map // reflect.Type → true

// Register records that T reads itself with Unmarshal.
func Register[T any]() { registered.Store(reflect.TypeFor[T](), true) }

// Registered reports whether t reads itself with Unmarshal: its JSON is an object of its
// fields, keyed by their tags or, from older files, their Go names.
func Registered(t reflect.Type) bool {
	_, ok := registered.Load(t)
	return ok
}
