package dae

import (
	"encoding/json"

	"github.com/locusml/locus/train"
)

// Family is the name under which checkpoints of denoising autoencoders (both kinds) are
// rebuilt (train.Load).
const Family = "dae"

func init() { train.RegisterConfigFamily(Family, New) }

// ParseConfig reads a Config from its JSON, refusing unknown fields, and validates it.
func ParseConfig(raw json.RawMessage) (Config, error) {
	return train.ParseConfig[Config]("dae", raw)
}
