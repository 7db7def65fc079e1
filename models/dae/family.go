package dae

import (
	"encoding/json"
	"fmt"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/train"
)

// Family is the name under which checkpoints of denoising autoencoders (both kinds) are
// rebuilt (train.Load).
const Family = "dae"

func init() {
	train.RegisterFamily(Family, func(raw json.RawMessage, ps *autodiff.Params) (train.Model, error) {
		cfg, err := ParseConfig(raw)
		if err != nil {
			return nil, err
		}
		return New(cfg, ps)
	})
}

// ParseConfig reads a Config from its JSON, refusing unknown fields, and validates it.
func ParseConfig(raw json.RawMessage) (Config, error) {
	var cfg Config
	if err := train.DecodeConfig(raw, &cfg); err != nil {
		return Config{}, fmt.Errorf("dae config: %w", err)
	}
	return cfg, cfg.Validate()
}
