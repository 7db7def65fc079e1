//go:build !amd64 || purego

package gemm

// extraKernels: no other kernel configuration.
func extraKernels() []*microKernel { return nil }
