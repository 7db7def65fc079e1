package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/models/transformer"
	"github.com/locusml/locus/train"
)

// oddFamily is a user's family that misbehaves in one way (its mode): it is the
// built-in Transformer family otherwise, under its own name and -model kind.
type oddFamily struct {
	transformerFamily
	mode string
}

// The modes of oddFamily, each a family name and its -model kind.
const (
	oddNilModel   = "odd-nilmodel"   // Configs returns a nil model configuration
	oddNoMarshal  = "odd-nomarshal"  // Configs returns a model configuration JSON cannot write
	oddToFlags    = "odd-toflags"    // ToFlags fails
	oddNoBest     = "odd-nobest"     // the session's Metrics lack the BestMetric
	oddNilSession = "odd-nilsession" // Open returns neither a session nor an error
	oddNoTwin     = "odd-notwin"     // no train.RegisterFamily of the same name
	oddNoKinds    = "odd-nokinds"    // Kinds is empty: no -model selects it
	oddFine       = "odd-fine"       // well behaved, to train checkpoints of the others
)

func init() {
	for _, m := range []string{oddNilModel, oddNoMarshal, oddToFlags, oddNoBest, oddNilSession, oddNoTwin, oddNoKinds, oddFine} {
		RegisterFamily(m, oddFamily{mode: m})
		if m != oddNoTwin {
			train.RegisterConfigFamily(m, transformer.New)
		}
	}
}

func (f oddFamily) Kinds() []string {
	if f.mode == oddNoKinds {
		return nil
	}
	return []string{f.mode}
}

func (f oddFamily) Configs(fl *ModelFlags) (any, any, error) {
	m, d, err := f.transformerFamily.Configs(fl)
	switch f.mode {
	case oddNilModel:
		m = nil
	case oddNoMarshal:
		m = map[string]any{"f": func() {}}
	}
	return m, d, err
}

func (f oddFamily) ToFlags(model, data json.RawMessage, fl *ModelFlags) error {
	if f.mode == oddToFlags {
		return errors.New("odd family: cannot read its configuration")
	}
	err := f.transformerFamily.ToFlags(model, data, fl)
	fl.Model = f.mode
	return err
}

func (f oddFamily) Open(model, data json.RawMessage, ps *autodiff.Params) (Session, error) {
	if f.mode == oddNilSession {
		return nil, nil
	}
	s, err := f.transformerFamily.Open(model, data, ps)
	if err != nil || f.mode != oddNoBest {
		return s, err
	}
	return noBestSession{s}, nil
}

// noBestSession evaluates without the metric its BestMetric names.
type noBestSession struct{ Session }

func (s noBestSession) Metrics(ctx context.Context, m *autodiff.Model, n int, seed uint64) (train.Metrics, error) {
	met, err := s.Session.Metrics(ctx, m, n, seed)
	delete(met, strings.TrimPrefix(s.BestMetric(), train.ValPrefix))
	return met, err
}

// oddCheckpoint trains a tiny run of the well-behaved odd family and rewrites its
// checkpoint's family to name, as if that family had trained it.
func oddCheckpoint(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	if code, _, stderr := runCLI(t, append([]string{"train", "-model", oddFine, "-steps", "2", "-out", dir}, tinyModel...)...); code != 0 {
		t.Fatalf("train -model %s: exit %d\n%s", oddFine, code, stderr)
	}
	ck, err := train.LoadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	ck.Family = name
	if err := train.SaveCheckpoint(ck.Dir, ck); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestMisbehavingFamilyOneLine: a user's family that breaks its contract (a nil or
// unmarshalable configuration, a failing ToFlags, Metrics without the BestMetric, Open
// without a session, no train.RegisterFamily twin, no kinds) gets one line from every
// command that needs the broken part, ending in a non-zero exit, and no panic from any
// command.
func TestMisbehavingFamilyOneLine(t *testing.T) {
	// check runs args; when want is not empty, the command must fail with its last line
	// (the error, after any progress) containing want; otherwise it may succeed.
	check := func(t *testing.T, args []string, want string) {
		t.Helper()
		code, _, stderr := runCLI(t, args...)
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		last := lines[len(lines)-1]
		switch {
		case want == "" && code != 0 && !strings.HasPrefix(last, "locus "+args[0]+": "):
			t.Errorf("%s: exit %d, stderr %q; want success or a one-line error", strings.Join(args, " "), code, stderr)
		case want != "" && (code == 0 || !strings.HasPrefix(last, "locus "+args[0]+": ") || !strings.Contains(last, want)):
			t.Errorf("%s: exit %d, stderr %q; want a non-zero exit and a last line containing %q", strings.Join(args, " "), code, stderr, want)
		}
	}
	// Training with the family's own flags.
	for _, tc := range []struct{ kind, want string }{
		{oddNilModel, "model family \"odd-nilmodel\": Configs returned no model configuration"},
		{oddNoMarshal, "model family \"odd-nomarshal\": model configuration: json: unsupported type"},
		{oddToFlags, "cannot read its configuration"},
		{oddNoBest, `best metric "val_loss" is not among the recorded metrics`},
		{oddNilSession, "model family \"odd-nilsession\": Open returned no session and no error"},
		{oddNoKinds, `unknown -model "odd-nokinds"`},
		{oddNoTwin, ""},
	} {
		dir := filepath.Join(t.TempDir(), "run")
		check(t, append([]string{"train", "-model", tc.kind, "-steps", "2", "-out", dir}, tinyModel...), tc.want)
	}
	// Every command on a checkpoint that the family wrote: must is the commands that
	// need the broken part.
	for _, tc := range []struct {
		family, want string
		must         []string
	}{
		{oddToFlags, "cannot read its configuration", []string{"export", "train"}},
		{oddNoBest, `best metric "val_loss" is not among the recorded metrics`, []string{"train"}},
		{oddNilSession, "Open returned no session and no error", []string{"eval", "export", "inspect", "report", "train"}},
		{oddNoTwin, "odd-notwin", nil},
		{oddNoKinds, "", nil},
	} {
		dir := oddCheckpoint(t, tc.family)
		for i, args := range [][]string{
			{"eval", "-ckpt", dir, "-n", "8"},
			{"export", "-ckpt", dir, "-format", "torch", "-out", "x"},
			{"export", "-ckpt", dir, "-format", "safetensors", "-out", "x"},
			{"export", "-ckpt", dir, "-format", "onnx", "-out", "x"},
			{"inspect", "-ckpt", dir, "-attention", "-out", "x"},
			{"inspect", "-ckpt", dir, "-kernels", "-out", "x"},
			{"report", "-ckpt", dir, "-out", "x.html"},
			{"train", "-resume", dir, "-steps", "4"},
		} {
			if args[len(args)-2] == "-out" {
				args[len(args)-1] = filepath.Join(t.TempDir(), fmt.Sprint(i, args[len(args)-1]))
			}
			want := ""
			if slices.Contains(tc.must, args[0]) {
				want = tc.want
			}
			check(t, args, want)
		}
	}
}
