package cli

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"

	"github.com/locusml/locus/internal/jsonkeys"
	"github.com/locusml/locus/internal/regularfile"
	"github.com/locusml/locus/train"
)

// runConfigFile is the run file that every run writes into its directory: the whole
// resolved configuration, which `locus train -config` starts from.
const runConfigFile = "config.json"

// maxRunFileBytes bounds the run file read by -config.
const maxRunFileBytes = 16 << 20

// runConfig is the layout of runConfigFile.
type runConfig struct {
	Versions    train.Versions  `json:"versions"` // what wrote the file; not read back
	Family      string          `json:"model_family"`
	ModelConfig json.RawMessage `json:"model_config"`
	DataConfig  json.RawMessage `json:"data_config,omitempty"` // holds the data seed
	Train       json.RawMessage `json:"train"`                 // trainSettings
}

// writeRunConfig writes dir/config.json.
func writeRunConfig(dir, family string, model json.RawMessage, data any, st trainSettings) error {
	rc := runConfig{
		Versions:    train.Versions{Format: train.FormatVersion, Locus: train.LocusVersion, Go: runtime.Version()},
		Family:      family,
		ModelConfig: model,
	}
	var err error
	if data != nil {
		if rc.DataConfig, err = json.Marshal(data); err != nil {
			return err
		}
	}
	if rc.Train, err = json.Marshal(st); err != nil {
		return err
	}
	b, err := json.MarshalIndent(rc, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(dir, runConfigFile)
	if err := regularfile.WriteFile(path, func(w io.Writer) error { _, err := w.Write(append(b, '\n')); return err }); err != nil {
		return fmt.Errorf("run file: %w", err)
	}
	return nil
}

// readRunConfig reads a run file. A key the file should not have is an error naming
// it and the nearest valid key.
func readRunConfig(path string) (*runConfig, error) {
	b, err := regularfile.ReadFile(path, maxRunFileBytes)
	if err != nil {
		return nil, err
	}
	var rc runConfig
	if err := checkKeys(b, reflect.TypeFor[runConfig](), path, ""); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &rc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	switch {
	case rc.Family == "" && train.MissingConfig(rc.ModelConfig):
		return nil, fmt.Errorf("%s: not a run file (model_family and model_config are missing)", path)
	case rc.Family == "":
		return nil, fmt.Errorf("%s: model_family is missing", path)
	case train.MissingConfig(rc.ModelConfig):
		return nil, fmt.Errorf("%s: model_config is missing (empty or null)", path)
	}
	if fam := families[rc.Family]; fam != nil {
		model, data := fam.ConfigTypes()
		if err := checkKeys(rc.ModelConfig, reflect.TypeOf(model), path, "model_config."); err != nil {
			return nil, err
		}
		if len(rc.DataConfig) > 0 {
			if err := checkKeys(rc.DataConfig, reflect.TypeOf(data), path, "data_config."); err != nil {
				return nil, err
			}
		}
	}
	return &rc, nil
}

// checkKeys reports the first key of the JSON object raw, or of the objects nested in
// it, that the struct type t does not have, with the nearest one t has. Values whose
// type reads itself (a TextUnmarshaler or json.Unmarshaler) and raw JSON are not
// looked into; a trainSettings is checked against its keys. Keys are named with their
// path from the file's top, prefix.
func checkKeys(raw []byte, t reflect.Type, file, prefix string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[trainSettings]() {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return nil // the decoder reports it
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if _, ok := settingsFlags[k]; !ok {
				return unknownKey(file, prefix, k, settingsKeys())
			}
		}
		return nil
	}
	pt := reflect.PointerTo(t)
	legacy := jsonkeys.Registered(t) // reads itself, but as its fields or their Go names
	if t.Kind() != reflect.Struct || (!legacy && (pt.Implements(reflect.TypeFor[encoding.TextUnmarshaler]()) || pt.Implements(reflect.TypeFor[json.Unmarshaler]()))) {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	fields := jsonFields(t)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		ft, ok := fields[k]
		if !ok {
			for name, f := range fields { // encoding/json matches case-insensitively
				if strings.EqualFold(name, k) {
					ft, ok = f, true
				}
			}
			if _, goNames := jsonkeys.Keys(t); legacy {
				for goName, key := range goNames { // a key of an older file
					if strings.EqualFold(goName, k) {
						ft, ok = fields[key], true
					}
				}
			}
		}
		if !ok {
			return unknownKey(file, prefix, k, slices.Sorted(maps.Keys(fields)))
		}
		if bytes.HasPrefix(bytes.TrimSpace(m[k]), []byte("{")) {
			if err := checkKeys(m[k], ft, file, prefix+k+"."); err != nil {
				return err
			}
		}
	}
	return nil
}

// jsonFields returns the JSON keys of a struct type with their field types, embedded
// structs' fields included (jsonkeys.Fields); a run file's "train" object is checked
// as a trainSettings.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for _, f := range jsonkeys.Fields(t) {
		if f.Type == reflect.TypeFor[json.RawMessage]() && f.Key == "train" {
			out[f.Key] = reflect.TypeFor[trainSettings]()
			continue
		}
		out[f.Key] = f.Type
	}
	return out
}
