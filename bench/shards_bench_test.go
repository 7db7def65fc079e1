package bench

import (
	"slices"
	"testing"
	"time"
)

// BenchmarkShardsAlternating runs a workload's train step whole (Shape.Shards 1) and as
// two parts (2) in one process, alternating blocks of 16 steps of each, and reports the
// median step time of each and, over the pairs of blocks, the median ratio whole/parts
// of the blocks' medians and the share of pairs where whole was faster: differences of
// a few percent that separate processes on a noisy machine do not resolve (autodiff's
// partsMin was set from them). Blocks, not single steps: a step right after the other
// model's would find its own parameters out of cache, as no training run does; the
// first two steps of a block are not counted. Each variant has its own parameters and
// data, from the same seed.
//
//	go test -run - -bench 'ShardsAlternating/dae$' -benchtime 200x ./bench
func BenchmarkShardsAlternating(b *testing.B) {
	for _, c := range []struct {
		name     string
		workload string
		batch    int
	}{{"dae", "dae", 0}, {"dae-b256", "dae", 256}, {"dae-b512", "dae", 512}, {"charlm", "charlm", 0}} {
		b.Run(c.name, func(b *testing.B) {
			const steps = 64
			var ws [2]*Workload
			for i, shards := range []int{1, 2} {
				w, err := NewShaped(c.workload, 0, steps, Shape{Batch: c.batch, Shards: shards})
				if err != nil {
					b.Fatal(err)
				}
				ws[i] = w
			}
			all, ratios := alternateBlocks(b, ws, steps)
			wins, whole := 0, make([]float64, len(ratios)) // whole/parts per pair
			for j, r := range ratios {
				whole[j] = 1 / r
				if r > 1 { // parts/whole: whole was faster
					wins++
				}
			}
			b.ReportMetric(median(all[0]), "whole-ms")
			b.ReportMetric(median(all[1]), "parts-ms")
			b.ReportMetric(median(whole), "whole/parts")
			b.ReportMetric(float64(wins)/float64(len(ratios)), "whole-faster")
		})
	}
}

// alternateBlocks runs ws[0] and ws[1] (each with data for steps steps) in turn, blocks of
// 16 steps of each per b.Loop iteration, the first two steps of a block not counted, and
// returns every counted step's milliseconds per variant and, per pair of blocks, the ratio
// of the blocks' medians, ws[1]'s over ws[0]'s. Blocks, not single steps: a step right
// after the other model's would find its own parameters out of cache, as no training run
// does.
func alternateBlocks(b *testing.B, ws [2]*Workload, steps int) (all [2][]float64, ratios []float64) {
	const block, skip = 16, 2
	i := 0
	for b.Loop() {
		var meds [2]float64
		for v, w := range ws {
			t := make([]float64, 0, block)
			for k := range block {
				t0 := time.Now()
				if _, _, err := w.Step((i*block + k) % steps); err != nil {
					b.Fatal(err)
				}
				if k >= skip {
					t = append(t, float64(time.Since(t0).Nanoseconds())/1e6)
				}
			}
			meds[v] = median(t)
			all[v] = append(all[v], t...)
		}
		ratios = append(ratios, meds[1]/meds[0])
		i++
	}
	return all, ratios
}

func median(x []float64) float64 {
	x = slices.Clone(x)
	slices.Sort(x)
	if n := len(x); n%2 == 0 {
		return (x[n/2-1] + x[n/2]) / 2
	}
	return x[len(x)/2]
}
