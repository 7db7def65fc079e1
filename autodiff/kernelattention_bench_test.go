//go:build unix

package autodiff

import (
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"gorgonia.org/tensor"
)

// cpuTime returns this process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkKernelAttention runs causal attention forward and backward at one charlm
// layer's shape (batch 32, 4 heads of d_head 16, T = 64, [B, T, H·d] layout, float32):
// the standard fused Attention against KernelAttention with the exponential, Gaussian and
// Epanechnikov kernels (fixed bandwidth), the Gaussian kernel with per-head bandwidths
// and a mixture of the exponential and Laplacian kernels, and TiledLocalMean with the Gaussian kernel; cpu-ms/op is the CPU time per
// pass (the machine is shared).
func BenchmarkKernelAttention(b *testing.B) {
	const batch, heads, dh, T = 32, 4, 16, 64
	rng := rand.New(rand.NewPCG(1, 1))
	in := map[string]*tensor.Dense{}
	for _, n := range []string{"q", "k", "v"} {
		v := make([]float32, batch*T*heads*dh)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		in[n] = tensor.New(tensor.WithShape(batch, T, heads*dh), tensor.WithBacking(v))
	}
	opt := TiledOptions{BandwidthValue: 4, Heads: heads, Mask: Mask{Causal: true}, HeadsInFeatures: true}
	cases := []struct {
		name string
		op   func(g *Graph, q, k, v *Node) *Node
	}{
		{"attention", func(g *Graph, q, k, v *Node) *Node { return g.Attention(q, k, v, nil, heads, 0.25, opt.Mask) }},
		{"exp", func(g *Graph, q, k, v *Node) *Node { return g.KernelAttention(testExp{}, q, k, v, opt) }},
		{"gauss", func(g *Graph, q, k, v *Node) *Node { return g.KernelAttention(testGauss{}, q, k, v, opt) }},
		{"epan", func(g *Graph, q, k, v *Node) *Node {
			o := opt
			o.BandwidthValue = 8
			return g.KernelAttention(testEpan{}, q, k, v, o)
		}},
		{"gauss/heads", func(g *Graph, q, k, v *Node) *Node {
			o := opt
			o.Bandwidth = g.ConstTensor([]int{heads}, []float64{3, 4, 5, 6})
			return g.KernelAttention(testGauss{}, q, k, v, o)
		}},
		{"mix(exp,laplace)", func(g *Graph, q, k, v *Node) *Node {
			o := opt
			o.KernelParams = g.ConstTensor([]int{2}, []float64{0.3, -0.2})
			return g.KernelAttention(testMix{testExp{}, testLaplace{}}, q, k, v, o)
		}},
		{"gauss/tiled", func(g *Graph, q, k, v *Node) *Node { return g.TiledLocalMean(testGauss{}, q, k, v, opt) }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			ps, _ := NewParams(Float32, 0)
			m := NewModel(ps, func(g *Graph) (Outputs, error) {
				out := c.op(g, g.Input("q"), g.Input("k"), g.Input("v"))
				return Outputs{Loss: g.Sum(out)}, g.Err()
			}, 0)
			mode := RunMode{InputGrads: true}
			if _, err := m.Run(in, mode); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			c0 := cpuTime()
			for i := 0; i < b.N; i++ {
				if _, err := m.Run(in, mode); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-c0)/float64(b.N)/1e6, "cpu-ms/op")
		})
	}
}
