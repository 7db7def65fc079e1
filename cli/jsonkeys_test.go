package cli

import (
	"bytes"
	"encoding"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/locusml/locus/bench"
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/internal/jsonkeys"
	"github.com/locusml/locus/train"
)

var snakeCase = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// TestSavedAndPrintedKeysAreSnakeCase walks every type that a checkpoint, a run file
// or a command's JSON output holds (every registered model family's configurations
// included) and checks that each JSON key is snake_case, so that a new field cannot
// forget its tag.
func TestSavedAndPrintedKeysAreSnakeCase(t *testing.T) {
	roots := []any{
		runConfig{}, trainSettings{}, train.Versions{}, train.LoopState{},
		datasets.StreamState{}, datasets.IteratorState{}, // data_state of the built-in data
		attentionView{}, bench.Result{}, e2eResult{}, // inspect -attention, bench -json
	}
	if len(families) == 0 {
		t.Fatal("no model families registered")
	}
	for _, fam := range families {
		m, d := fam.ConfigTypes()
		roots = append(roots, m, d)
	}
	seen := map[reflect.Type]bool{}
	var walk func(typ reflect.Type, path string)
	walk = func(typ reflect.Type, path string) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Array || typ.Kind() == reflect.Map {
			typ = typ.Elem() // map keys are data, not field names
		}
		if typ.Kind() != reflect.Struct || seen[typ] {
			return
		}
		seen[typ] = true
		pt := reflect.PointerTo(typ)
		if pt.Implements(reflect.TypeFor[json.Marshaler]()) || pt.Implements(reflect.TypeFor[encoding.TextMarshaler]()) {
			if typ != reflect.TypeFor[trainSettings]() { // writes its own tags' keys
				return
			}
		}
		for i := range typ.NumField() {
			f := typ.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" || (!f.IsExported() && !f.Anonymous) {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			if f.Anonymous && name == "" {
				walk(f.Type, path)
				continue
			}
			if name == "" {
				name = f.Name
			}
			if !snakeCase.MatchString(name) {
				t.Errorf("%s (%s.%s): JSON key %q is not snake_case", path+name, typ, f.Name, name)
			}
			walk(f.Type, path+name+".")
		}
	}
	for _, r := range roots {
		walk(reflect.TypeOf(r), "")
	}
	if !seen[reflect.TypeFor[datasets.TaskConfig]()] {
		t.Error("the walk did not reach datasets.TaskConfig")
	}
}

// goNamed rewrites the JSON object raw, a T, with the Go field names as keys, as the
// versions before the snake_case tags wrote it.
func goNamed[T any](t *testing.T, raw json.RawMessage) json.RawMessage {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	_, goNames := jsonkeys.Keys(reflect.TypeFor[T]())
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	old := map[string]json.RawMessage{}
	for goName, key := range goNames {
		if val, ok := m[key]; ok {
			old[goName] = val
		}
	}
	b, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"`+reflect.TypeFor[T]().Field(0).Name+`"`)) {
		t.Fatalf("no Go-name key in %s", b)
	}
	return b
}

// TestGoNameKeysStillLoad: a checkpoint and a run file written before the snake_case
// keys (task_config and data_state with Go field names, "SeqLen") still load: the run
// resumes bit-identical to an uninterrupted one, and a run file trains.
func TestGoNameKeysStillLoad(t *testing.T) {
	base := t.TempDir()
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	mustTrain(t, append([]string{"-steps", "8", "-out", a}, tiny...)...)
	mustTrain(t, append([]string{"-steps", "4", "-out", b}, tiny...)...)

	oldData := func(raw json.RawMessage) json.RawMessage {
		var d map[string]json.RawMessage
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		d["task_config"] = goNamed[datasets.TaskConfig](t, d["task_config"])
		out, _ := json.Marshal(d)
		return out
	}
	meta := filepath.Join(b, "step-000004", train.MetaFile)
	raw, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m["data_config"] = oldData(m["data_config"])
	m["data_state"] = goNamed[datasets.StreamState](t, m["data_state"])
	if raw, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte(`"SeqLen":6`)) || !bytes.Contains(raw, []byte(`"BatchSize":8`)) {
		t.Fatalf("the rewritten checkpoint lacks the old keys: %s", raw)
	}
	if err := os.WriteFile(meta, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := runCLI(t, "eval", "-ckpt", b, "-n", "16", "-json"); code != 0 || !strings.Contains(stdout, "seq_acc") {
		t.Fatalf("eval of a checkpoint with Go-name keys: exit %d %q %s", code, stdout, stderr)
	}
	mustTrain(t, "-steps", "8", "-resume", b)
	if !bytes.Equal(readWeights(t, filepath.Join(a, "step-000008")), readWeights(t, filepath.Join(b, "step-000008"))) {
		t.Fatal("a resumed checkpoint with Go-name keys trains otherwise than an uninterrupted run")
	}

	// A run file of that version.
	rf, err := os.ReadFile(filepath.Join(a, runConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]json.RawMessage
	if err := json.Unmarshal(rf, &r); err != nil {
		t.Fatal(err)
	}
	r["data_config"] = oldData(r["data_config"])
	if rf, err = json.Marshal(r); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(base, "old.json")
	if err := os.WriteFile(old, rf, 0o644); err != nil {
		t.Fatal(err)
	}
	c := filepath.Join(base, "c")
	if code, _, stderr := runCLI(t, "train", "-config", old, "-out", c, "-steps", "8"); code != 0 {
		t.Fatalf("train -config with Go-name keys: exit %d\n%s", code, stderr)
	}
	if !bytes.Equal(readWeights(t, filepath.Join(a, "step-000008")), readWeights(t, filepath.Join(c, "step-000008"))) {
		t.Fatal("a run file with Go-name keys trains otherwise than the run that wrote it")
	}
	ck, err := train.LoadCheckpoint(c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(compactJSON(ck.DataConfig), []byte(`"task_config":{"seq_len":6`)) {
		t.Errorf("the new run's data config %s is not written snake_case", ck.DataConfig)
	}
	// A misspelt key of either generation is still named.
	bad := bytes.Replace(rf, []byte(`"SeqLen"`), []byte(`"SeqLn"`), 1)
	if err := os.WriteFile(old, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, "train", "-config", old, "-out", filepath.Join(base, "d"))
	oneLine(t, "run file with SeqLn", code, stderr, 2, `unknown key "data_config.task_config.SeqLn"`)
}
