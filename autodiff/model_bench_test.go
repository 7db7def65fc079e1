package autodiff

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"

	"gorgonia.org/tensor"
)

// processCPUSeconds returns the CPU time of this process (user + system), which hardly
// moves with the other processes of a shared machine, unlike wall time. (gorgonia runs
// a graph on a goroutine of its own, so the caller's thread time would miss it.)
func processCPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// BenchmarkModelStepDAE times what Model adds around the ops of a training step: one
// ForwardBackward of the dae workload's MLP (784-256-64-256-784, ReLU, sigmoid, MSE,
// batch 128, float32) after ZeroGrad, whole and as 2 parts, on one core (GOMAXPROCS
// 1), by process CPU time (metric cpu-µs/op):
//
//	go test -run - -bench ModelStepDAE -count 5 ./autodiff
func BenchmarkModelStepDAE(b *testing.B) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ps, err := NewParams(Float32, 1)
	if err != nil {
		b.Fatal(err)
	}
	dims := []int{784, 256, 64, 256, 784}
	var ws, bs []*Param
	for i := range len(dims) - 1 {
		w, err := ps.Root().New(fmt.Sprintf("w%d", i), []int{dims[i+1], dims[i]}, TorchLinear(dims[i]))
		if err != nil {
			b.Fatal(err)
		}
		bias, err := ps.Root().New(fmt.Sprintf("b%d", i), []int{dims[i+1]}, TorchLinear(dims[i]))
		if err != nil {
			b.Fatal(err)
		}
		ws, bs = append(ws, w), append(bs, bias)
	}
	mod := NewModel(ps, func(g *Graph) (Outputs, error) {
		x := g.Input("x")
		h := x
		for i := range ws {
			h = g.Linear(h, g.Param(ws[i]), g.Param(bs[i]))
			if i < len(ws)-1 {
				h = g.ReLU(h)
			}
		}
		y := g.Sigmoid(h)
		n := x.Shape()[0]
		loss := g.MSE(y, g.Input("t"))
		return Outputs{Loss: loss, Values: map[string]*Node{"recon": y},
			Batch: &Batch{Examples: n, LossItems: func(in map[string]*tensor.Dense) float64 { return float64(in["x"].Shape().TotalSize()) }}}, g.Err()
	}, 1)
	rng := rand.New(rand.NewPCG(2, 3))
	x, t := make([]float32, 128*784), make([]float32, 128*784)
	for i := range x {
		x[i], t[i] = rng.Float32(), rng.Float32()
	}
	in := map[string]*tensor.Dense{
		"x": tensor.New(tensor.WithShape(128, 784), tensor.WithBacking(x)),
		"t": tensor.New(tensor.WithShape(128, 784), tensor.WithBacking(t)),
	}
	for _, shards := range []int{1, 2} {
		b.Run(fmt.Sprintf("parts=%d", shards), func(b *testing.B) {
			if err := mod.SetShards(shards); err != nil {
				b.Fatal(err)
			}
			step := func() {
				ps.ZeroGrad()
				if _, err := mod.ForwardBackward(in); err != nil {
					b.Fatal(err)
				}
			}
			step()
			b.ResetTimer()
			t0 := processCPUSeconds()
			for range b.N {
				step()
			}
			b.ReportMetric((processCPUSeconds()-t0)/float64(b.N)*1e6, "cpu-µs/op")
		})
	}
}
