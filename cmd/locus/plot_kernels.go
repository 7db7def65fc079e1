package main

import "fmt"

// renderKernels draws each layer's kernel profile; see inspect -kernels.
func renderKernels(ld *loaded, title string) ([]byte, error) {
	return nil, fmt.Errorf("-kernels is not implemented yet")
}
