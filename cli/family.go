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
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/internal/quote"
	"github.com/locusml/locus/models/dae"
	"github.com/locusml/locus/models/transformer"
	"github.com/locusml/locus/train"
)

// Family is a kind of model that the command line trains, evaluates and inspects. The
// built-in families are "transformer" (-model transformer) and "dae" (-model dae, ldae);
// a program of your own adds its families with RegisterFamily before it calls Main.
//
// A family's name is also the name its model package registered with
// train.RegisterFamily: checkpoints record it (train.Loop.Family), and export and
// train.Load rebuild the model through train's registry.
type Family interface {
	// Kinds returns the -model values of the family (transformer; dae and ldae).
	Kinds() []string
	// Configs returns the model and data configurations that the flags describe, each a
	// value that encoding/json writes (the checkpoint's model_config and data_config).
	Configs(f *ModelFlags) (model, data any, err error)
	// ToFlags writes saved configurations into f as the flags that would give them, so
	// that -resume and -config can compare them with the flags given; data may be empty.
	// A recipe's model configuration may leave out what the data determines (the
	// transformer's vocab): ToFlags should accept that, since no flag sets it.
	ToFlags(model, data json.RawMessage, f *ModelFlags) error
	// ConfigTypes returns zero values of the model and data configuration types, whose
	// JSON keys a run file is checked against.
	ConfigTypes() (model, data any)
	// Open builds the model from its saved configuration, its parameters in ps, and its
	// data unless data is empty (inspect and export open the model alone).
	Open(model, data json.RawMessage, ps *autodiff.Params) (Session, error)
}

// Session is a model with its data, rebuilt from flags or from a checkpoint.
//
// A session may also have the methods that some commands need, found by a type
// assertion: those of KernelSession for inspect -kernels and the report's kernel
// pictures, AttentionSession's for inspect -attention and the report's attention
// pictures, and LengthSession's for eval -seqlen. locus sample is for the Transformer's character LMs only.
type Session interface {
	// Describe returns one line for the start of training and for eval.
	Describe() string
	// Builder is the model's graph.
	Builder() autodiff.Builder
	// DataConfig returns the data configuration to save (with what opening it filled in),
	// or nil for a session opened without data.
	DataConfig() any
	// TrainData returns the training batches.
	TrainData() (train.Data, error)
	// Metrics evaluates the model run by m on n fresh validation examples drawn with
	// seed, stopping with ctx.Err() once ctx is done. It must include the BestMetric.
	Metrics(ctx context.Context, m *autodiff.Model, n int, seed uint64) (train.Metrics, error)
	// BestMetric names the metric that selects the best checkpoint (a key of Metrics,
	// without the "val_" prefix the loop adds).
	BestMetric() string
	// ItemsName says what a batch counts ("sequences", "images"), for throughput.
	ItemsName() string
	// Bandwidths returns the learned bandwidths by layer; nil for a model without any.
	Bandwidths() map[string][]float64
	// Finish writes what the family adds to a finished run's directory (pictures); it
	// may do nothing.
	Finish(dir string, m *autodiff.Model, seed uint64, stdout io.Writer) error
}

// LengthSession is a Session that evaluates its model at sequence lengths other than its
// training one (locus eval -seqlen): a family whose data and model are defined at other
// lengths gives its sessions this method. A session without it is refused by -seqlen.
type LengthSession interface {
	Session
	// AtLength returns a session over the same parameters whose Metrics evaluate
	// sequences of length t, in the unit of the training -seqlen (the data re-drawn or
	// regenerated at t, the model built for it), or an error saying why the model or
	// its data is not defined at t.
	AtLength(t int) (Session, error)
}

// families maps train's family names to the command line's.
var families = map[string]Family{}

// RegisterFamily makes a model family available to every command under name, which must
// be the name its model is registered under with train.RegisterFamily. Call it from an
// init function, before Main. It panics on an empty name, a nil family, a name registered
// twice or a -model kind that another family has: those are programming errors.
func RegisterFamily(name string, f Family) {
	if name == "" || f == nil {
		panic("cli: RegisterFamily: empty name or nil family")
	}
	if _, dup := families[name]; dup {
		panic("cli: RegisterFamily: family " + name + " registered twice")
	}
	for other, g := range families {
		for _, k := range f.Kinds() {
			if slices.Contains(g.Kinds(), k) {
				panic(fmt.Sprintf("cli: RegisterFamily(%q): -model %s belongs to family %s already", name, k, other))
			}
		}
	}
	families[name] = f
}

// modelKinds returns every family's -model values, sorted.
func modelKinds() []string {
	var all []string
	for _, f := range families {
		all = append(all, f.Kinds()...)
	}
	sort.Strings(all)
	return all
}

// familyOfKind returns the family whose -model values include kind.
func familyOfKind(kind string) (string, Family, error) {
	for name, f := range families {
		if slices.Contains(f.Kinds(), kind) {
			return name, f, nil
		}
	}
	return "", nil, usageErrorf("unknown -model %s (valid: %s)", quote.Text(kind), strings.Join(modelKinds(), ", "))
}

// checkpointFamily returns the family of a checkpoint. Checkpoints that the command
// line wrote before families were recorded are recognised by their data (an MNIST task
// is a DAE's, any other task a Transformer's) when their model configuration is that
// family's; any other checkpoint without a family is refused with errNoFamily.
func checkpointFamily(ck *train.Checkpoint) (string, Family, error) {
	name := ck.Family
	if name == "" {
		if name = legacyFamily(ck); name == "" {
			return "", nil, errNoFamily(ck.Dir)
		}
	}
	f, ok := families[name]
	if !ok {
		return name, nil, fmt.Errorf("%s: model family %s is not one this program knows (%s): a family of your own needs a locus binary that registers it (cli.RegisterFamily)", ck.Dir, quote.Text(name), strings.Join(slices.Sorted(maps.Keys(families)), ", "))
	}
	return name, f, nil
}

// legacyFamily returns the family of a checkpoint written without one by an early
// locus train, or "" when it is not such a checkpoint.
func legacyFamily(ck *train.Checkpoint) string {
	var d struct {
		Task string `json:"task"`
	}
	if len(ck.DataConfig) == 0 || json.Unmarshal(ck.DataConfig, &d) != nil || d.Task == "" {
		return ""
	}
	name := transformer.Family
	if d.Task == "mnist" {
		name = dae.Family
	}
	f, ok := families[name]
	if !ok || f.ToFlags(ck.ModelConfig, ck.DataConfig, &ModelFlags{}) != nil {
		return ""
	}
	return name
}

// openSession is Family.Open for every command: a family of one's own that returns
// neither a session nor an error gets an error naming it, not a nil session.
func openSession(name string, fam Family, model, data json.RawMessage, ps *autodiff.Params) (Session, error) {
	s, err := fam.Open(model, data, ps)
	if err == nil && s == nil {
		err = fmt.Errorf("model family %s: Open returned no session and no error", quote.Text(name))
	}
	return s, err
}

// errNoFamily is the error of a checkpoint that records no model family.
func errNoFamily(dir string) error {
	return fmt.Errorf("%s: no model family recorded (written by a train.Loop without Family): set Loop.Family to the name the model is registered under with train.RegisterFamily", dir)
}

// loaded is a checkpoint opened with its family: the model with the saved weights, and
// its data when the checkpoint has a data configuration.
type loaded struct {
	ck     *train.Checkpoint
	family string
	sess   Session
	params *autodiff.Params
	run    *autodiff.Model
}

// fromCheckpoint opens the checkpoint at path. The data files its data configuration
// names are announced on note before they are read.
func fromCheckpoint(path string, note io.Writer) (*loaded, error) {
	if path == "" {
		return nil, errMissingCkpt
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
	s, err := openSession(name, fam, ck.ModelConfig, ck.DataConfig, ps)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ck.Dir, err)
	}
	if err := ck.ApplyParams(ps); err != nil {
		return nil, err
	}
	run := autodiff.NewModel(ps, s.Builder(), 0)
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
		fmt.Fprintf(w, "locus: reading the corpus %s (data_config.corpus of %s)\n", quote.Name(d.Corpus), ck.Dir)
	}
	if d.MNIST != "" {
		fmt.Fprintf(w, "locus: reading MNIST from %s (data_config.mnist of %s)\n", quote.Name(d.MNIST), ck.Dir)
	}
}

// checkConfigs validates a checkpoint's model and data configurations, as a resume
// would, for the commands that do not build the model (export, inspect). A checkpoint
// of a family this program does not know passes; one without a family does not.
func checkConfigs(ck *train.Checkpoint) error {
	_, fam, err := checkpointFamily(ck)
	if fam == nil {
		if ck.Family == "" {
			return err
		}
		return nil
	}
	if err := fam.ToFlags(ck.ModelConfig, ck.DataConfig, &ModelFlags{}); err != nil {
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
func loadModelOnly(ck *train.Checkpoint) (Session, error) {
	name, fam, err := checkpointFamily(ck)
	if err != nil {
		return nil, err
	}
	ps, err := autodiff.NewParams(autodiff.Float32, 0)
	if err != nil {
		return nil, err
	}
	s, err := openSession(name, fam, ck.ModelConfig, nil, ps)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ck.Dir, err)
	}
	return s, ck.ApplyParams(ps)
}

// atLength returns the checkpoint's session at sequence length t (LengthSession) and the
// model that runs it over the checkpoint's parameters.
func (ld *loaded) atLength(t int) (Session, *autodiff.Model, error) {
	ls, ok := ld.sess.(LengthSession)
	if !ok {
		return nil, nil, datasets.LengthErrorf("%s: -seqlen %d: model family %s cannot evaluate at another sequence length (its sessions have no AtLength)", ld.ck.Dir, t, quote.Text(ld.family))
	}
	s, err := ls.AtLength(t)
	if err == nil && s == nil {
		err = fmt.Errorf("model family %s: AtLength returned no session and no error", quote.Text(ld.family))
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: -seqlen %d: %w", ld.ck.Dir, t, err)
	}
	run := autodiff.NewModel(ld.params, s.Builder(), 0)
	if len(ld.ck.RNG) > 0 {
		if err := run.SetRNGState(ld.ck.RNG); err != nil {
			return nil, nil, fmt.Errorf("%s: rng state: %w", ld.ck.Dir, err)
		}
	}
	return s, run, nil
}
