package train

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/internal/quote"
)

// Model is a trainable model as a checkpoint rebuilds it: its graph over the parameters
// it created.
type Model interface {
	Builder() autodiff.Builder
}

// BuildFunc creates a model of one family from its saved configuration (the JSON of
// Checkpoint.ModelConfig), its parameters in ps.
type BuildFunc func(config json.RawMessage, ps *autodiff.Params) (Model, error)

var (
	familiesMu sync.RWMutex
	families   = map[string]BuildFunc{}
)

// RegisterFamily makes a model family loadable by name: a checkpoint written by a Loop
// whose Family is name is rebuilt by build. The package that defines a model registers
// it from init (models/transformer as "transformer", models/dae as "dae"); user code may
// add its own. It panics on an empty name, a nil build or a name registered twice.
func RegisterFamily(name string, build BuildFunc) {
	familiesMu.Lock()
	defer familiesMu.Unlock()
	if name == "" || build == nil {
		panic("train: RegisterFamily: empty name or nil build")
	}
	if _, dup := families[name]; dup {
		panic("train: RegisterFamily: " + name + " registered twice")
	}
	families[name] = build
}

// Families returns the registered family names, sorted.
func Families() []string {
	familiesMu.RLock()
	defer familiesMu.RUnlock()
	names := make([]string, 0, len(families))
	for n := range families {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Config is a model configuration that checks itself.
type Config interface{ Validate() error }

// ParseConfig reads a configuration of type C from its JSON (DecodeConfig) and validates
// it; what names the configuration in errors.
func ParseConfig[C Config](what string, raw json.RawMessage) (C, error) {
	var cfg C
	if MissingConfig(raw) {
		return cfg, fmt.Errorf("%s config is missing (model_config is empty or null)", what)
	}
	if err := DecodeConfig(raw, &cfg); err != nil {
		return cfg, fmt.Errorf("%s config: %w", what, err)
	}
	return cfg, cfg.Validate()
}

// RegisterConfigFamily registers a family whose saved configuration is a C, built by
// newModel: the usual case of RegisterFamily.
func RegisterConfigFamily[C Config, M Model](name string, newModel func(C, *autodiff.Params) (M, error)) {
	RegisterFamily(name, func(raw json.RawMessage, ps *autodiff.Params) (Model, error) {
		cfg, err := ParseConfig[C](name, raw)
		if err != nil {
			return nil, err
		}
		return newModel(cfg, ps)
	})
}

// MissingConfig reports whether a saved configuration's JSON is absent: empty or null.
func MissingConfig(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}

// DecodeConfig reads a saved configuration into v, refusing fields v does not have, so
// that a misspelt key in a hand-edited checkpoint is an error, not a silent default.
func DecodeConfig(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	// The decoder echoes an unknown key whole: quote it short, as every echo of a file.
	if key, ok := strings.CutPrefix(fmt.Sprint(err), "json: unknown field "); ok {
		if k, uerr := strconv.Unquote(key); uerr == nil {
			return fmt.Errorf("json: unknown field %s", quote.Text(k))
		}
	}
	return err
}

// Loaded is a model rebuilt from a checkpoint, its weights restored.
type Loaded struct {
	Checkpoint *Checkpoint
	Family     string
	Model      Model
	Params     *autodiff.Params
}

// Load reads the checkpoint at path (a run or checkpoint directory, as for
// LoadCheckpoint), rebuilds its model with the registered family, and copies the saved
// weights into fresh parameters of the given dtype.
func Load(path string, dtype autodiff.Dtype) (*Loaded, error) {
	ck, err := LoadCheckpoint(path)
	if err != nil {
		return nil, err
	}
	m, ps, err := ck.Build(dtype)
	if err != nil {
		return nil, err
	}
	return &Loaded{Checkpoint: ck, Family: ck.Family, Model: m, Params: ps}, nil
}

// BuildModel creates a model of the registered family from its configuration (JSON),
// its parameters in ps.
func BuildModel(family string, config json.RawMessage, ps *autodiff.Params) (Model, error) {
	familiesMu.RLock()
	build, ok := families[family]
	familiesMu.RUnlock()
	switch {
	case !ok && family == "":
		return nil, fmt.Errorf("no model family recorded (written without Loop.Family): cannot rebuild the model")
	case !ok:
		return nil, fmt.Errorf("unknown model family %s (registered: %s; a model of your own is registered with train.RegisterFamily)", quote.Text(family), strings.Join(Families(), ", "))
	case MissingConfig(config):
		return nil, fmt.Errorf("the model configuration is missing (empty or null)")
	}
	m, err := build(config, ps)
	if err != nil {
		return nil, fmt.Errorf("model_config: %w", err)
	}
	return m, nil
}

// Build rebuilds the checkpoint's model with its registered family, with fresh
// parameters of the given dtype holding the checkpoint's weights.
func (ck *Checkpoint) Build(dtype autodiff.Dtype) (Model, *autodiff.Params, error) {
	ps, err := autodiff.NewParams(dtype, 0)
	if err != nil {
		return nil, nil, err
	}
	m, err := BuildModel(ck.Family, ck.ModelConfig, ps)
	if err != nil {
		return nil, nil, fmt.Errorf("load checkpoint %s: %w", ck.file(MetaFile), err)
	}
	if err := ck.ApplyParams(ps); err != nil {
		return nil, nil, err
	}
	return m, ps, nil
}
