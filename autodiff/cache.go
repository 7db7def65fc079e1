package autodiff

import "runtime"

// A Model keeps what it compiled for each input signature, so that a signature it has
// seen runs without compiling again. A compiled graph holds buffers for its values, so
// a caller whose inputs grow at every run (decoding with a key/value cache that grows by
// a token, as transformer.Generator did before its cache had fixed capacities) would keep
// one graph per run (about 2 MB each for the char LM: 17 GB after 10k tokens).
// The cache therefore keeps the most recently used signatures within a budget of values:
// signatureBudget bytes of graph values (the newest signature is always kept) and at most
// maxSignatures signatures. Training and evaluation use a few signatures; generating with
// the char LM's 64-token context about 65, 1–2 MB each.
//
// A dropped graph's buffers are garbage, but the collector lets the heap grow to about
// twice what is live before it runs (GOGC=100): a signature that replaces a large one
// (the evaluation graph after the training graph at T = 4096, and the training graph
// again after it) would allocate its buffers beside the dropped ones, and the process's
// peak would be the two graphs, not one (1.5 GB against the step's 0.9 GB). So when the
// values dropped at once, or the new graph's, reach collectAfterDrop, the Model collects
// before the new graph's first run allocates its buffers, and they take the dropped
// ones' place (collectDropped).
var (
	signatureBudget  int64 = 256 << 20
	maxSignatures          = 1024
	collectAfterDrop int64 = 32 << 20
)

// signatureCache maps input signatures to what Model compiled for them.
type signatureCache[V any] struct {
	tick    uint64
	bytes   int64
	entries map[string]*signatureEntry[V]
}

type signatureEntry[V any] struct {
	v     V
	bytes int64
	used  uint64
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

// put stores v, whose graphs hold bytes of values, for key, then drops the least recently
// used other entries while the cache is over its budget, and returns the bytes it dropped.
func (c *signatureCache[V]) put(key []byte, v V, bytes int64) (dropped int64) {
	if old, ok := c.entries[string(key)]; ok {
		c.bytes -= old.bytes
	}
	c.tick++
	k := string(key)
	c.entries[k] = &signatureEntry[V]{v: v, bytes: bytes, used: c.tick}
	c.bytes += bytes
	for len(c.entries) > 1 && (c.bytes > signatureBudget || len(c.entries) > maxSignatures) {
		var oldest string
		first := true
		for ek, e := range c.entries {
			if ek != k && (first || e.used < c.entries[oldest].used) {
				oldest, first = ek, false
			}
		}
		dropped += c.entries[oldest].bytes
		c.bytes -= c.entries[oldest].bytes
		delete(c.entries, oldest)
	}
	return dropped
}

// collectDropped runs the garbage collector when dropped (bytes of graph values a cache
// just let go) or added (the bytes of the graph it just took, whose first run allocates
// them) reaches collectAfterDrop, so that the new graph's buffers take the place of the
// dropped ones and of whatever else is garbage by then: loading a corpus and compiling
// the graph left about 70 MB of it before `locus train`'s first step at T = 4096, which
// sat beside the buffers at the run's peak.
func collectDropped(dropped, added int64) {
	if dropped >= collectAfterDrop || added >= collectAfterDrop {
		runtime.GC()
	}
}

// len returns the number of signatures kept.
func (c *signatureCache[V]) len() int { return len(c.entries) }

// graphBytes returns the bytes of the values of g's nodes: what its compiled machine
// holds, about.
func graphBytes(g *Graph) int64 {
	size := int64(4)
	if g.dtype == Float64 {
		size = 8
	}
	return graphValues(g) * size
}

// bytes returns what c's buffers hold: graphBytes, with the outputs its buffer plan
// places counted as the plan's arena (which holds the kernels' states it places too).
// Subtracting the states as well, as outputs, made a graph whose attention weights are
// its largest buffers count for less than nothing (−117 MB for charlm's evaluation graph
// at T = 1024, 87 MB for its 330 MB training graph), and the cache kept both.
func (c *compiled) bytes() int64 {
	return graphBytes(c.g) - c.plan.opBytes + c.plan.sharedBytes
}

// graphValues returns the number of values of g's nodes.
func graphValues(g *Graph) int64 {
	var n int64
	for _, node := range g.eg.AllNodes() {
		if s := node.Shape(); s != nil {
			n += int64(s.TotalSize())
		}
	}
	return n
}
