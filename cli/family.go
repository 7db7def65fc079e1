package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/internal/quote"
	"github.com/locusml/locus/train"
)

// family is a kind of model the command line trains, evaluates and inspects: one value
// per model family of train's registry, in its own file.
type family interface {
	// kinds returns the -model values of the family (transformer; dae and ldae).
	kinds() []string
	// configs returns the model and data configurations that the flags describe.
	configs(f *trainFlags) (model, data any, err error)
	// toFlags writes saved configurations into f as the flags that would give them.
	toFlags(model, data json.RawMessage, f *trainFlags) error
	// configTypes returns zero values of the model and data configuration types, whose
	// JSON keys a run file is checked against.
	configTypes() (model, data any)
	// open builds the model from its saved configuration, its parameters in ps, and its
	// data unless data is empty.
	open(model, data json.RawMessage, ps *autodiff.Params) (session, error)
}

// session is a model with its data, rebuilt from flags or from a checkpoint.
type session interface {
	// describe returns one line for the start of training.
	describe() string
	// builder is the model's graph.
	builder() autodiff.Builder
	// dataConfig returns the data configuration to save (with what opening it filled in).
	dataConfig() any
	// trainData returns the training batches.
	trainData() (train.Data, error)
	// metrics evaluates the model run by m on n fresh validation examples, stopping
	// with ctx.Err() once ctx is done.
	metrics(ctx context.Context, m *autodiff.Model, n int, seed uint64) (train.Metrics, error)
	// bestMetric names the metric that selects the best checkpoint; itemsName what a
	// batch counts.
	bestMetric() string
	itemsName() string
	// bandwidths returns the learned bandwidths by layer (none for fixed ones).
	bandwidths() map[string][]float64
	// finish writes what the family adds to a finished run's directory.
	finish(dir string, m *autodiff.Model, seed uint64, stdout io.Writer) error
}

// families maps train's family names to the command line's.
var families = map[string]family{}

func registerFamily(name string, f family) { families[name] = f }

// familyOfKind returns the family whose -model values include kind.
func familyOfKind(kind string) (string, family, error) {
	var all []string
	for name, f := range families {
		for _, k := range f.kinds() {
			if k == kind {
				return name, f, nil
			}
			all = append(all, k)
		}
	}
	sort.Strings(all)
	return "", nil, usageErrorf("unknown -model %s (valid: %s)", quote.Text(kind), strings.Join(all, ", "))
}

// checkpointFamily returns the family of a checkpoint; checkpoints written before
// families were recorded are recognised by their data.
func checkpointFamily(ck *train.Checkpoint) (string, family, error) {
	name := ck.Family
	if name == "" {
		var d struct {
			Task string `json:"task"`
		}
		_ = json.Unmarshal(ck.DataConfig, &d)
		name = "transformer"
		if d.Task == "mnist" {
			name = "dae"
		}
	}
	f, ok := families[name]
	if !ok {
		return name, nil, fmt.Errorf("%s: model family %s is not one the command line knows (%s)", ck.Dir, quote.Text(name), strings.Join(slices.Sorted(maps.Keys(families)), ", "))
	}
	return name, f, nil
}

// loaded is a checkpoint opened with its family: the model with the saved weights, and
// its data when the checkpoint has a data configuration.
type loaded struct {
	ck     *train.Checkpoint
	family string
	sess   session
	params *autodiff.Params
	run    *autodiff.Model
}

// fromCheckpoint opens the checkpoint at path. The data files its data configuration
// names are announced on note before they are read.
func fromCheckpoint(path string, note io.Writer) (*loaded, error) {
	if path == "" {
		return nil, usageErrorf("missing -ckpt DIR")
	}
	ck, err := train.LoadCheckpoint(path)
	if err != nil {
		return nil, err
	}
	announceDataFiles(note, ck)
	name, fam, err := checkpointFamily(ck)
	if err != nil {
		return nil, err
	}
	ps, err := autodiff.NewParams(autodiff.Float32, 0)
	if err != nil {
		return nil, err
	}
	s, err := fam.open(ck.ModelConfig, ck.DataConfig, ps)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ck.Dir, err)
	}
	if err := ck.ApplyParams(ps); err != nil {
		return nil, err
	}
	run := autodiff.NewModel(ps, s.builder(), 0)
	if len(ck.RNG) > 0 {
		if err := run.SetRNGState(ck.RNG); err != nil {
			return nil, fmt.Errorf("%s: rng state: %w", ck.Dir, err)
		}
	}
	return &loaded{ck: ck, family: name, sess: s, params: ps, run: run}, nil
}

// announceDataFiles says which files a checkpoint's data configuration makes this
// program read (a corpus, an MNIST folder): a checkpoint from someone else must not
// make Locus read files without a word. Corpora are also checked against the digest
// recorded at training time (transformer.DataConfig.CorpusSHA256).
func announceDataFiles(w io.Writer, ck *train.Checkpoint) {
	var d struct {
		Corpus string `json:"corpus"`
		MNIST  string `json:"mnist"`
	}
	if json.Unmarshal(ck.DataConfig, &d) != nil {
		return
	}
	if d.Corpus != "" {
		fmt.Fprintf(w, "locus: reading the corpus %s (data_config.corpus of %s)\n", d.Corpus, ck.Dir)
	}
	if d.MNIST != "" {
		fmt.Fprintf(w, "locus: reading MNIST from %s (data_config.mnist of %s)\n", d.MNIST, ck.Dir)
	}
}

// checkConfigs validates a checkpoint's model and data configurations, as a resume
// would, for the commands that do not build the model (export, inspect). A checkpoint
// of a family this program does not know passes.
func checkConfigs(ck *train.Checkpoint) error {
	_, fam, err := checkpointFamily(ck)
	if err != nil {
		return nil
	}
	if err := fam.toFlags(ck.ModelConfig, ck.DataConfig, &trainFlags{}); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(ck.Dir, train.MetaFile), err)
	}
	return nil
}

// errNoData is the error of a session opened without a data configuration.
func errNoData(what string) error {
	return fmt.Errorf("the checkpoint has no data configuration, so %s is not possible (inspect and export still work)", what)
}

// loadModelOnly rebuilds a checkpoint's model with its weights but without its data,
// for what needs only the model.
func loadModelOnly(ck *train.Checkpoint) (session, error) {
	_, fam, err := checkpointFamily(ck)
	if err != nil {
		return nil, err
	}
	ps, err := autodiff.NewParams(autodiff.Float32, 0)
	if err != nil {
		return nil, err
	}
	s, err := fam.open(ck.ModelConfig, nil, ps)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ck.Dir, err)
	}
	return s, ck.ApplyParams(ps)
}
