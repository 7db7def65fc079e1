//go:build unix

package layers

import (
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff"
)

// cpuTime returns this process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkAttentionKernels times one forward+backward pass of a charlm-sized causal
// attention layer (B=32, T=64, d=64, 4 heads, float32) per kernel and bandwidth mode,
// reporting CPU ms per pass (cpu-ms/op) besides wall time: the machine is shared.
func BenchmarkAttentionKernels(b *testing.B) {
	for _, c := range []struct {
		name string
		mode BandwidthMode
	}{
		{"exponential", BandwidthFixed}, {"gaussian", BandwidthFixed}, {"laplacian", BandwidthFixed},
		{"cauchy", BandwidthFixed}, {"epanechnikov", BandwidthFixed}, {"tricube", BandwidthFixed},
		{"uniform", BandwidthFixed}, {"gaussian * window(8)", BandwidthFixed}, {"laplacian * relbias(4)", BandwidthFixed},
		{"exponential", BandwidthHead}, {"gaussian", BandwidthHead},
		{"mixture(exponential, laplacian)", BandwidthFixed}, {"mixture(gaussian, cauchy)", BandwidthFixed},
	} {
		b.Run(c.name+"/"+c.mode.String(), func(b *testing.B) {
			ps, _ := autodiff.NewParams(autodiff.Float32, 0)
			a, err := NewKernelAttention(ps.Root(), AttentionConfig{Dim: 64, Heads: 4, Causal: true, Init: InitGPT,
				Kernel: MustParseKernelSpec(c.name).Kernel, Bandwidth: BandwidthConfig{Mode: c.mode}})
			if err != nil {
				b.Fatal(err)
			}
			x := randDense(rand.New(rand.NewPCG(1, 1)), 1, 32, 64, 64)
			xf := denseOf(autodiff.Float32, x.Shape(), x.Data().([]float64))
			m := autodiff.NewModel(ps, func(g *autodiff.Graph) (autodiff.Outputs, error) {
				return autodiff.Outputs{Loss: g.Sum(g.Square(a.Forward(g, g.Input("x"))))}, g.Err()
			}, 0)
			in := map[string]*tensor.Dense{"x": xf}
			run := func() {
				ps.ZeroGrad()
				if _, err := m.Run(in, autodiff.RunMode{Backward: true}); err != nil {
					b.Fatal(err)
				}
			}
			run()
			b.ResetTimer()
			c0 := cpuTime()
			for range b.N {
				run()
			}
			b.ReportMetric(float64(cpuTime()-c0)/float64(b.N)/1e6, "cpu-ms/op")
		})
	}
}
