package dae

import (
	"fmt"
	"math"
	"strings"

	"github.com/locusml/locus/internal/quote"
	"github.com/locusml/locus/layers"
)

// Model kinds accepted by Config.Kind.
const (
	KindMLP       = "dae"  // the MLP denoising autoencoder
	KindLocalized = "ldae" // the localized DAE: local means over learned prototypes
)

// Config describes a denoising autoencoder. Start from DefaultConfig or
// DefaultLocalizedConfig. A zero field means the default its comment names (Kernel,
// MinBandwidth) or is a valid setting it names (Sigma 0: no noise); a zero with neither
// (In, the widths, InitBandwidth, Kind, Noise) is a Validate error naming the field.
//
// Parameter names. Linear layers have "weight" [out, in] (PyTorch's nn.Linear layout,
// y = x·Wᵀ + b) and "bias" [out]. The MLP ("dae") has one Linear layer per step of
// In → Hidden… → In, named "enc.<i>" up to and including the narrowest hidden layer and
// "dec.<i>" after it: for the reference 784-256-64-256-784, enc.0 (784→256), enc.1
// (256→64), dec.0 (64→256), dec.1 (256→784).
//
// The localized DAE ("ldae") has "enc" (In→Width), then per level "level.<l>":
// "memory" [Prototypes, Width] (the learned prototypes), "attn" (a layers.KernelAttention
// of the level's input over the memory: "attn.q", "attn.k", "attn.v", "attn.o" Linear
// Width→Width and "attn.bandwidth.rho" [Heads], h = softplus(ρ) + MinBandwidth) and "map"
// (Width→Width); then "dec" (Width→In).
type Config struct {
	// Kind is KindMLP or KindLocalized.
	Kind string `json:"kind"`
	// In is the number of input coordinates (784 for MNIST).
	In int `json:"in"`

	// Hidden lists the MLP's hidden widths, encoder then decoder.
	Hidden []int `json:"hidden,omitempty"`

	// Levels is the number of local-mean levels of the localized DAE.
	Levels int `json:"levels,omitempty"`
	// Prototypes is the number of memory slots per head and level.
	Prototypes int `json:"prototypes,omitempty"`
	// Heads is the number of kernels per level, each with its own query, key and value
	// maps (Width/Heads columns) and bandwidth.
	Heads int `json:"heads,omitempty"`
	// Width is the width of the code: the encoder's output, each level's attention and
	// pointwise map; a multiple of Heads.
	Width int `json:"width,omitempty"`
	// Kernel is the kernel of every level's attention over its prototypes: any spec of
	// the layers kernel language; nil means gaussian.
	Kernel *layers.KernelSpec `json:"kernel,omitempty"`
	// InitBandwidth is the initial bandwidth h of every head, > MinBandwidth.
	InitBandwidth float64 `json:"init_bandwidth,omitempty"`
	// MinBandwidth is the floor h_min of the learned bandwidth; 0 means 1e-3 (that of
	// layers.BandwidthConfig).
	MinBandwidth float64 `json:"min_bandwidth,omitempty"`

	// Noise is the training corruption: NoiseGaussian, NoiseMask or NoiseSaltPepper.
	Noise string `json:"noise"`
	// Sigma is the noise level: the standard deviation for Gaussian noise, the fraction
	// of coordinates for masking and salt-and-pepper. Zero is a valid setting: no noise.
	Sigma float64 `json:"sigma"`
}

// defaultMinBandwidth is layers.BandwidthConfig's floor, which a zero MinBandwidth has
// always meant.
const defaultMinBandwidth = 1e-3

// withDefaults returns c with the zero fields of its kind set to their defaults.
func (c Config) withDefaults() Config {
	if c.Kind == KindLocalized {
		if c.Kernel == nil {
			c.Kernel = &layers.KernelSpec{Kernel: layers.Gaussian{}}
		}
		if c.MinBandwidth == 0 {
			c.MinBandwidth = defaultMinBandwidth
		}
	}
	return c
}

// DefaultConfig returns the reference MLP DAE: 784-256-64-256-784 trained with
// Gaussian noise of σ = 0.3.
func DefaultConfig() Config {
	return Config{Kind: KindMLP, In: 784, Hidden: []int{256, 64, 256}, Noise: NoiseGaussian, Sigma: 0.3}
}

// DefaultLocalizedConfig returns a localized DAE for MNIST: width 256, two levels of 4
// Gaussian heads over 128 prototypes, trained with Gaussian noise of σ = 0.3.
func DefaultLocalizedConfig() Config {
	return Config{
		Kind: KindLocalized, In: 784,
		Levels: 2, Prototypes: 128, Heads: 4, Width: 256,
		Kernel: &layers.KernelSpec{Kernel: layers.Gaussian{}}, InitBandwidth: 2, MinBandwidth: 0.05,
		Noise: NoiseGaussian, Sigma: 0.3,
	}
}

// Size limits of Validate: far above MNIST's models, low enough that a mistyped size is
// an error instead of an out-of-memory crash.
const (
	MaxWidth  = 1 << 16 // In, each hidden width, Prototypes, Heads, Width
	MaxLevels = 64      // hidden layers, Levels
)

// Validate reports the first problem with c, its zero fields taken as their defaults.
func (c Config) Validate() error {
	c = c.withDefaults()
	if c.In < 1 || c.In > MaxWidth {
		return fmt.Errorf("dae config: In=%d, want 1 to %d", c.In, MaxWidth)
	}
	if len(c.Hidden) > MaxLevels || c.Levels > MaxLevels {
		return fmt.Errorf("dae config: %d hidden layers and %d levels, want at most %d", len(c.Hidden), c.Levels, MaxLevels)
	}
	for _, n := range append([]int{c.Prototypes, c.Heads, c.Width}, c.Hidden...) {
		if n > MaxWidth {
			return fmt.Errorf("dae config: a width of %d (hidden %v, prototypes %d, heads %d, width %d), want at most %d", n, c.Hidden, c.Prototypes, c.Heads, c.Width, MaxWidth)
		}
	}
	if math.IsNaN(c.MinBandwidth) || math.IsInf(c.InitBandwidth, 0) {
		return fmt.Errorf("dae config: bandwidths %g and %g must be finite", c.MinBandwidth, c.InitBandwidth)
	}
	if _, err := NewCorruption(c.Noise, c.Sigma); err != nil {
		return fmt.Errorf("dae config: %w", err)
	}
	switch c.Kind {
	case KindMLP:
		if len(c.Hidden) == 0 {
			return fmt.Errorf("dae config: the MLP needs at least one hidden layer")
		}
		for _, h := range c.Hidden {
			if h < 1 {
				return fmt.Errorf("dae config: hidden widths %v must be positive", c.Hidden)
			}
		}
	case KindLocalized:
		if c.Levels < 1 || c.Prototypes < 1 || c.Heads < 1 || c.Width < 1 {
			return fmt.Errorf("dae config: Levels=%d Prototypes=%d Heads=%d Width=%d must be positive",
				c.Levels, c.Prototypes, c.Heads, c.Width)
		}
		if c.Width%c.Heads != 0 {
			return fmt.Errorf("dae config: Width=%d is not a multiple of Heads=%d", c.Width, c.Heads)
		}
		if c.MinBandwidth < 0 || c.InitBandwidth <= c.MinBandwidth {
			return fmt.Errorf("dae config: need 0 < MinBandwidth (%g; 0 means %g) < InitBandwidth (%g)", c.MinBandwidth, defaultMinBandwidth, c.InitBandwidth)
		}
	default:
		return fmt.Errorf("dae config: unknown kind %s (valid: %s, %s)", quote.Text(c.Kind), KindMLP, KindLocalized)
	}
	return nil
}

// String describes c on one line.
func (c Config) String() string {
	var b strings.Builder
	switch c.Kind {
	case KindMLP:
		fmt.Fprintf(&b, "dae %d", c.In)
		for _, h := range c.Hidden {
			fmt.Fprintf(&b, "-%d", h)
		}
		fmt.Fprintf(&b, "-%d", c.In)
	case KindLocalized:
		fmt.Fprintf(&b, "ldae in=%d width=%d levels=%d prototypes=%d heads=%d kernel=%s h0=%g h_min=%g",
			c.In, c.Width, c.Levels, c.Prototypes, c.Heads, c.Kernel, c.InitBandwidth, c.MinBandwidth)
	default:
		fmt.Fprintf(&b, "%q", c.Kind)
	}
	fmt.Fprintf(&b, " noise=%s(%g)", c.Noise, c.Sigma)
	return b.String()
}
