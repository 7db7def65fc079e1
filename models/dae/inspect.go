package dae

import (
	"fmt"
	"math"
)

// Levels returns the number of local-mean levels (0 for the MLP).
func (m *Model) Levels() int { return len(m.levels) }

// DecodedPrototypes returns the prototypes of level l of a localized DAE as images, for
// looking at them: the output map applied to each memory row, sigmoid(dec(memory_p)),
// [Prototypes][In] in (0, 1). It reads each prototype as if it were a code of the last
// level, which is how the decoder would show it; a prototype is a key in code space, not
// an image the model ever outputs.
func (m *Model) DecodedPrototypes(l int) ([][]float32, error) {
	if l < 0 || l >= len(m.levels) {
		return nil, fmt.Errorf("dae: level %d of a model with %d local-mean levels", l, len(m.levels))
	}
	mem, w, b := m.levels[l].memory, m.dec.Weight, m.dec.Bias
	p, width, in := m.cfg.Prototypes, m.cfg.Width, m.cfg.In
	out := make([][]float32, p)
	for i := range out {
		out[i] = make([]float32, in)
		for o := range in {
			z := 0.0
			if b != nil {
				z = b.At(o)
			}
			for c := range width {
				z += w.At(o*width+c) * mem.At(i*width+c)
			}
			out[i][o] = float32(1 / (1 + math.Exp(-z)))
		}
	}
	return out, nil
}
