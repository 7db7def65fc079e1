package cli

import (
	"github.com/locusml/locus/layers"
	"github.com/locusml/locus/models/dae"
	"github.com/locusml/locus/train"
)

// lossLabel names a session's training loss with its unit, for the y axis of loss.png.
func lossLabel(s Session) string {
	switch s := s.(type) {
	case *transformerSession:
		return "cross-entropy (nats/" + s.itemUnit() + ")"
	case *daeSession:
		if s.cfg.Kind == dae.KindLocalized || s.cfg.Kind == dae.KindMLP {
			return "MSE per pixel (0–1 scale)"
		}
	}
	return "loss"
}

// itemUnit is what the transformer's loss averages over: a character of a corpus, a
// scored token of a task.
func (s *transformerSession) itemUnit() string {
	if s.data != nil && s.data.Corpus != nil {
		return "char"
	}
	return "token"
}

// bandwidthLabel names a session's bandwidth with its unit, for the y axis of
// bandwidths.png: the units of what its kernel divides by h (q·k for a dot kernel such
// as the exponential, the distance ‖q − k‖ for the others).
func bandwidthLabel(s Session) string {
	ks, ok := s.(KernelSession)
	if !ok {
		return train.DefaultBandwidthLabel
	}
	k, err := ks.Kernel()
	if err != nil {
		return train.DefaultBandwidthLabel
	}
	dot, dist := false, false
	for _, part := range kernelParts(k) {
		if _, uniform := part.(layers.Uniform); uniform {
			continue
		}
		if dotKernel(part) {
			dot = true
		} else {
			dist = true
		}
	}
	switch {
	case dot && dist:
		return "bandwidth h (units of q·k and of ‖q − k‖)"
	case dot:
		return "bandwidth h (units of the score q·k)"
	case dist:
		return "bandwidth h (units of the distance ‖q − k‖)"
	}
	return train.DefaultBandwidthLabel
}
