package dist

import (
	"fmt"

	"github.com/locusml/locus/autodiff"
)

// buckets packs a parameter set's gradients, then the total weight and the extra
// values, into buffers of the parameters' dtype of at most BucketBytes each (a parameter
// larger than that gets a buffer of its own).
type buckets struct {
	ps     *autodiff.Params
	params []*autodiff.Param
	nextra int
	f32    [][]float32
	f64    [][]float64
	at     []place // where each parameter's gradient starts
	tail   place   // where the weight and the extra values are
}

type place struct{ bucket, offset int }

func newBuckets(ps *autodiff.Params, nextra int) *buckets {
	b := &buckets{ps: ps, params: ps.List(), nextra: nextra}
	elem := 8
	if ps.Dtype() == autodiff.Float32 {
		elem = 4
	}
	limit := max(1, BucketBytes/elem)
	var sizes []int
	add := func(n int) place {
		if len(sizes) == 0 || (sizes[len(sizes)-1] > 0 && sizes[len(sizes)-1]+n > limit) {
			sizes = append(sizes, 0)
		}
		p := place{len(sizes) - 1, sizes[len(sizes)-1]}
		sizes[len(sizes)-1] += n
		return p
	}
	for _, p := range b.params {
		b.at = append(b.at, add(p.Size()))
	}
	b.tail = add(1 + nextra)
	for _, n := range sizes {
		if elem == 4 {
			b.f32 = append(b.f32, make([]float32, n))
		} else {
			b.f64 = append(b.f64, make([]float64, n))
		}
	}
	return b
}

// fits reports whether b was made for ps as it is now and nextra extra values.
func (b *buckets) fits(ps *autodiff.Params, nextra int) bool {
	if b.ps != ps || b.nextra != nextra || ps.Len() != len(b.params) {
		return false
	}
	for i, p := range ps.List() {
		if p != b.params[i] {
			return false
		}
	}
	return true
}

// bytes is the size of the buffers.
func (b *buckets) bytes() int64 {
	var n int64
	for _, f := range b.f32 {
		n += 4 * int64(len(f))
	}
	for _, f := range b.f64 {
		n += 8 * int64(len(f))
	}
	return n
}

func (b *buckets) average(c *Comm, weight float64, extra []float64) (float64, error) {
	if b.f32 != nil {
		return average(c, b, b.f32, (*autodiff.Param).GradFloat32s, c.AllReduceFloat32, weight, extra)
	}
	return average(c, b, b.f64, (*autodiff.Param).GradFloat64s, c.AllReduce, weight, extra)
}

func average[F float32 | float64](c *Comm, b *buckets, bufs [][]F, grad func(*autodiff.Param) []F, reduce func([]F) error,
	weight float64, extra []float64) (float64, error) {
	w := F(weight)
	for i, p := range b.params {
		at, g := b.at[i], grad(p)
		dst := bufs[at.bucket][at.offset : at.offset+len(g)]
		if w == 0 {
			clear(dst)
			continue
		}
		for j, v := range g {
			dst[j] = v * w
		}
	}
	tail := bufs[b.tail.bucket][b.tail.offset : b.tail.offset+1+len(extra)]
	tail[0] = w
	for i, v := range extra {
		tail[1+i] = F(v)
	}
	for i, buf := range bufs {
		if err := reduce(buf); err != nil {
			return 0, fmt.Errorf("dist: all-reduce of gradient bucket %d (%d values): %w", i, len(buf), err)
		}
	}
	total := tail[0]
	for i := range extra {
		extra[i] = float64(tail[1+i])
	}
	for i, p := range b.params {
		at, g := b.at[i], grad(p)
		src := bufs[at.bucket][at.offset : at.offset+len(g)]
		if total == 0 {
			clear(g)
			continue
		}
		for j, v := range src {
			g[j] = v / total
		}
	}
	return float64(total), nil
}
