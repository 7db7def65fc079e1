package layers

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Kernel is a localization kernel K(q, k) with bandwidth h, evaluated in the log domain (THEORY.md §1).
type Kernel interface {
	Name() string
	// LogK returns log K(q, k) at bandwidth h > 0; math.Inf(-1) where the kernel is zero.
	LogK(q, k []float64, h float64) float64
}

// Exponential is the dot-product kernel, log K(q, k) = q·k / h.
// With h = sqrt(d_head) it is the softmax kernel of standard attention.
type Exponential struct{}

// Gaussian is the RBF kernel, log K(q, k) = -‖q − k‖² / (2h²).
type Gaussian struct{}

// Laplacian is the exponential-distance kernel, log K(q, k) = -‖q − k‖ / h.
type Laplacian struct{}

// Cauchy is the heavy-tailed kernel, log K(q, k) = -log(1 + ‖q − k‖² / h²).
type Cauchy struct{}

// Epanechnikov is the compactly supported kernel,
// log K(q, k) = log max(0, 1 − ‖q − k‖² / h²); it is -Inf for ‖q − k‖ >= h.
type Epanechnikov struct{}

// Name returns "exponential".
func (Exponential) Name() string { return "exponential" }

// Name returns "gaussian".
func (Gaussian) Name() string { return "gaussian" }

// Name returns "laplacian".
func (Laplacian) Name() string { return "laplacian" }

// Name returns "cauchy".
func (Cauchy) Name() string { return "cauchy" }

// Name returns "epanechnikov".
func (Epanechnikov) Name() string { return "epanechnikov" }

// LogK returns q·k / h. It panics if len(q) != len(k).
func (Exponential) LogK(q, k []float64, h float64) float64 {
	checkLen(q, k)
	var dot float64
	for i, v := range q {
		dot += v * k[i]
	}
	return dot / h
}

// LogK returns -‖q − k‖² / (2h²). It panics if len(q) != len(k).
func (Gaussian) LogK(q, k []float64, h float64) float64 {
	return -sqDist(q, k) / (2 * h * h)
}

// LogK returns -‖q − k‖ / h. It panics if len(q) != len(k).
func (Laplacian) LogK(q, k []float64, h float64) float64 {
	return -math.Sqrt(sqDist(q, k)) / h
}

// LogK returns -log(1 + ‖q − k‖² / h²). It panics if len(q) != len(k).
func (Cauchy) LogK(q, k []float64, h float64) float64 {
	return -math.Log1p(sqDist(q, k) / (h * h))
}

// LogK returns log(1 − ‖q − k‖² / h²), or -Inf outside the support
// ‖q − k‖ < h. It panics if len(q) != len(k).
func (Epanechnikov) LogK(q, k []float64, h float64) float64 {
	u := sqDist(q, k) / (h * h)
	if u >= 1 {
		return math.Inf(-1)
	}
	return math.Log1p(-u)
}

var kernelsByName = map[string]Kernel{
	"exponential":  Exponential{},
	"gaussian":     Gaussian{},
	"laplacian":    Laplacian{},
	"cauchy":       Cauchy{},
	"epanechnikov": Epanechnikov{},
}

// KernelNames returns the names KernelByName accepts, sorted.
func KernelNames() []string {
	names := make([]string, 0, len(kernelsByName))
	for n := range kernelsByName {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// KernelByName returns the kernel called name (as returned by its Name method).
func KernelByName(name string) (Kernel, error) {
	if k, ok := kernelsByName[name]; ok {
		return k, nil
	}
	return nil, fmt.Errorf("unknown kernel %q (valid: %s)", name, strings.Join(KernelNames(), ", "))
}

func checkLen(q, k []float64) {
	if len(q) != len(k) {
		panic(fmt.Sprintf("layers: kernel arguments have lengths %d and %d", len(q), len(k)))
	}
}

func sqDist(q, k []float64) float64 {
	checkLen(q, k)
	var s float64
	for i, v := range q {
		d := v - k[i]
		s += d * d
	}
	return s
}
