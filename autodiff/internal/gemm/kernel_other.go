//go:build !amd64 || purego

package gemm

// kernels lists the micro-kernels this CPU can run, best first.
func kernels() []*microKernel { return []*microKernel{goKernel} }

// peakLoops returns no FMA peak loop: there is none in portable Go.
func peakLoops() map[string]peakLoop { return nil }
