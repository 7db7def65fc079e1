package autodiff

// maxSignatures bounds how many input signatures a Model keeps compiled. A compiled graph
// holds buffers for every value of the graph, so decoding with a key/value cache, whose
// inputs grow by a token at every step, would otherwise keep one graph per generated token
// (about 2 MB each for the char LM: 17 GB after 10k tokens). Training and evaluation use
// a few signatures (the batch, a last partial batch), far below the bound.
const maxSignatures = 32

// signatureCache maps input signatures to what Model compiled for them, keeping the
// maxSignatures most recently used ones.
type signatureCache[V any] struct {
	tick    uint64
	entries map[string]*signatureEntry[V]
}

type signatureEntry[V any] struct {
	v    V
	used uint64
}

func newSignatureCache[V any]() signatureCache[V] {
	return signatureCache[V]{entries: map[string]*signatureEntry[V]{}}
}

// get returns the value for key and marks it used.
func (c *signatureCache[V]) get(key []byte) (V, bool) {
	e, ok := c.entries[string(key)]
	if !ok {
		var zero V
		return zero, false
	}
	c.tick++
	e.used = c.tick
	return e.v, true
}

// put stores v for key, first dropping the least recently used entry when the cache is full.
func (c *signatureCache[V]) put(key []byte, v V) {
	if _, ok := c.entries[string(key)]; !ok && len(c.entries) >= maxSignatures {
		var oldest string
		first := true
		for k, e := range c.entries {
			if first || e.used < c.entries[oldest].used {
				oldest, first = k, false
			}
		}
		delete(c.entries, oldest)
	}
	c.tick++
	c.entries[string(key)] = &signatureEntry[V]{v: v, used: c.tick}
}

// len returns the number of signatures kept.
func (c *signatureCache[V]) len() int { return len(c.entries) }
