package cli

import "github.com/locusml/locus/models/dae"

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
