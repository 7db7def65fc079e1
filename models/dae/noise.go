package dae

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/locusml/locus/internal/quote"
)

// Corruption turns clean inputs into noisy ones. Corrupt writes the corrupted clean into
// dst (which may alias clean); both have the same length.
type Corruption interface {
	Corrupt(dst, clean []float32, rng *rand.Rand)
	String() string
}

// Gaussian adds independent N(0, Sigma²) noise to every coordinate, without clipping.
type Gaussian struct{ Sigma float64 }

// Masking sets each coordinate to 0 independently with probability Fraction
// (masking noise, "dropping" pixels).
type Masking struct{ Fraction float64 }

// SaltPepper sets each coordinate independently with probability Fraction to 0 or 1,
// each with probability one half.
type SaltPepper struct{ Fraction float64 }

// Corrupt adds Gaussian noise.
func (c Gaussian) Corrupt(dst, clean []float32, rng *rand.Rand) {
	s := c.Sigma
	for i, v := range clean {
		dst[i] = v + float32(s*rng.NormFloat64())
	}
}

// Corrupt zeroes a random subset of coordinates.
func (c Masking) Corrupt(dst, clean []float32, rng *rand.Rand) {
	p := c.Fraction
	for i, v := range clean {
		if rng.Float64() < p {
			v = 0
		}
		dst[i] = v
	}
}

// Corrupt replaces a random subset of coordinates by 0 or 1.
func (c SaltPepper) Corrupt(dst, clean []float32, rng *rand.Rand) {
	p := c.Fraction
	for i, v := range clean {
		if u := rng.Float64(); u < p {
			v = 0
			if u < p/2 {
				v = 1
			}
		}
		dst[i] = v
	}
}

// String describes the corruption, e.g. "gaussian(sigma=0.3)".
func (c Gaussian) String() string { return fmt.Sprintf("gaussian(sigma=%g)", c.Sigma) }

// String describes the corruption, e.g. "mask(fraction=0.25)".
func (c Masking) String() string { return fmt.Sprintf("mask(fraction=%g)", c.Fraction) }

// String describes the corruption, e.g. "saltpepper(fraction=0.1)".
func (c SaltPepper) String() string { return fmt.Sprintf("saltpepper(fraction=%g)", c.Fraction) }

// Noise kinds accepted by NewCorruption and Config.Noise.
const (
	NoiseGaussian   = "gaussian"
	NoiseMask       = "mask"
	NoiseSaltPepper = "saltpepper"
)

// NewCorruption returns the corruption called kind at the given level: the standard
// deviation for "gaussian", the fraction of coordinates for "mask" and "saltpepper".
func NewCorruption(kind string, level float64) (Corruption, error) {
	switch kind {
	case NoiseGaussian:
		if !(level >= 0) || math.IsInf(level, 0) {
			return nil, fmt.Errorf("gaussian noise: sigma %g, want a finite value >= 0", level)
		}
		return Gaussian{Sigma: level}, nil
	case NoiseMask, NoiseSaltPepper:
		if !(level >= 0 && level <= 1) {
			return nil, fmt.Errorf("%s noise: fraction %g outside [0, 1]", kind, level)
		}
		if kind == NoiseMask {
			return Masking{Fraction: level}, nil
		}
		return SaltPepper{Fraction: level}, nil
	}
	return nil, fmt.Errorf("unknown noise %s (valid: %s)", quote.Text(kind), strings.Join([]string{NoiseGaussian, NoiseMask, NoiseSaltPepper}, ", "))
}
