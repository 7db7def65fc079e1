package optim

import (
	"strings"

	"github.com/locusml/locus/autodiff"
)

// DefaultNoDecay is the default rule of DecayGroups. It exempts from weight decay the
// parameters that usually should not be decayed: biases, normalization weights and
// embeddings. A parameter is exempt when
//
//   - its shape is 1-D (biases, norm gains and shifts), or
//   - its last name component is "bias", or
//   - a name component, split further at '_' and '-', is "ln" or "ln" followed by
//     digits ("ln", "ln_f", "ln1"), or contains "norm" ("norm", "layernorm",
//     "rms_norm") or "emb" ("emb", "tok_emb", "embedding").
func DefaultNoDecay(name string, shape []int) bool {
	if len(shape) == 1 {
		return true
	}
	parts := strings.Split(name, ".")
	if parts[len(parts)-1] == "bias" {
		return true
	}
	for _, part := range parts {
		for _, w := range strings.FieldsFunc(part, func(r rune) bool { return r == '_' || r == '-' }) {
			w = strings.ToLower(w)
			if strings.Contains(w, "norm") || strings.Contains(w, "emb") {
				return true
			}
			if rest, ok := strings.CutPrefix(w, "ln"); ok && strings.Trim(rest, "0123456789") == "" {
				return true
			}
		}
	}
	return false
}

// NoDecayVectors is nanoGPT's rule (GPT.configure_optimizers): a parameter of two or
// more dimensions (a weight matrix, an embedding table) is decayed, one of fewer (a
// bias, a norm's gain or shift) is exempt. Unlike DefaultNoDecay it decays embeddings
// and looks at shapes only, not names. Pass it to DecayGroups.
func NoDecayVectors(_ string, shape []int) bool { return len(shape) < 2 }

// DecayGroups splits params into a group decayed with the config's WeightDecay and a
// group with WeightDecay 0, keeping their order, and leaves out an empty group.
// noDecay(name, shape) reports whether a parameter goes to the second group; nil means
// DefaultNoDecay.
func DecayGroups(params []*autodiff.Param, noDecay func(name string, shape []int) bool) []Group {
	if noDecay == nil {
		noDecay = DefaultNoDecay
	}
	var decay, keep []*autodiff.Param
	for _, p := range params {
		if noDecay(p.Name(), p.Shape()) {
			keep = append(keep, p)
		} else {
			decay = append(decay, p)
		}
	}
	var groups []Group
	if len(decay) > 0 {
		groups = append(groups, Group{Params: decay})
	}
	if len(keep) > 0 {
		groups = append(groups, Group{Params: keep, WeightDecay: new(0.0)})
	}
	return groups
}
