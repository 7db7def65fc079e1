package bench

import (
	"testing"

	"github.com/locusml/locus/layers"
)

// kernelCases are the attention kernels of issue 18's item 2 at charlm's shape, the
// configurations of kernel_ratios.sh.
var kernelCases = []struct {
	name, kernel string
	bw           layers.BandwidthMode
}{
	{"gaussian", "gaussian", layers.BandwidthFixed},
	{"laplacian", "laplacian", layers.BandwidthFixed},
	{"cauchy", "cauchy", layers.BandwidthFixed},
	{"epanechnikov", "epanechnikov", layers.BandwidthFixed},
	{"tricube", "tricube", layers.BandwidthFixed},
	{"uniform", "uniform", layers.BandwidthFixed},
	{"exponential-head", "exponential", layers.BandwidthHead},
	{"gaussian-head", "gaussian", layers.BandwidthHead},
	{"laplacian-head", "laplacian", layers.BandwidthHead},
	{"gaussian-window8", "gaussian * window(8)", layers.BandwidthFixed},
	{"laplacian-relbias4", "laplacian * relbias(4)", layers.BandwidthFixed},
	{"mixture-exponential-laplacian", "mixture(exponential, laplacian)", layers.BandwidthFixed},
	{"mixture-gaussian-cauchy", "mixture(gaussian, cauchy)", layers.BandwidthFixed},
}

// BenchmarkKernelsAlternating runs charlm's train step with a kernel and with the
// exponential kernel (fixed bandwidth) in one process, alternating blocks of 16 steps of
// each as BenchmarkShardsAlternating does, and reports each one's median step time and,
// over the pairs of blocks, the median ratio kernel/exponential of the blocks' medians
// (issue 18, item 2: at most 1.2): on a noisy machine the ratio of separate processes
// (kernel_ratios.sh) moves by more than the differences between kernels. Run it on one
// thread, as kernel_ratios.sh does, on each code path:
//
//	LOCUS_CPU=avx2 go test -run - -bench KernelsAlternating -benchtime 40x -cpu 1 ./bench
func BenchmarkKernelsAlternating(b *testing.B) {
	for _, c := range kernelCases {
		b.Run(c.name, func(b *testing.B) {
			const steps = 32
			var ws [2]*Workload
			for i, s := range []Shape{{}, {Kernel: c.kernel, Bandwidth: c.bw}} {
				w, err := NewShaped("charlm", 0, steps, s)
				if err != nil {
					b.Fatal(err)
				}
				ws[i] = w
			}
			all, ratios := alternateBlocks(b, ws, steps)
			b.ReportMetric(median(all[0]), "exp-ms")
			b.ReportMetric(median(all[1]), "kernel-ms")
			b.ReportMetric(median(ratios), "kernel/exp")
		})
	}
}
