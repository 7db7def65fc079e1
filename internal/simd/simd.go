// Package simd decides, once at start, which vector instruction sets Locus's kernels may
// use: the best the processor and the operating system offer, or fewer when the
// environment variable LOCUS_CPU asks (generic, avx2 or avx512), so that every code path
// of gemm, vmath and the optimizers can be run and benchmarked on one machine.
//
// A level is a ceiling, not a promise: a kernel also checks the features it needs
// (LOCUS_CPU=avx512 on a processor without AVX-512 runs the AVX2 kernels). Builds for
// other architectures and with -tags purego are always Generic.
package simd

import (
	"fmt"
	"os"
	"strings"
)

// Level is a set of vector instructions, each level including the ones below it.
type Level int

const (
	Generic Level = iota // plain Go
	AVX2                 // AVX2 and FMA
	AVX512               // AVX-512 F, VL (and what each kernel checks besides)
)

// Env is the environment variable that caps the level.
const Env = "LOCUS_CPU"

var names = [...]string{Generic: "generic", AVX2: "avx2", AVX512: "avx512"}

// String returns the level's name as LOCUS_CPU spells it.
func (l Level) String() string {
	if l < Generic || l > AVX512 {
		return fmt.Sprintf("Level(%d)", int(l))
	}
	return names[l]
}

// MarshalText returns the level's name.
func (l Level) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText parses a level's name (case-insensitive); "" and "auto" mean the best
// level the machine has.
func (l *Level) UnmarshalText(b []byte) error {
	v, err := ParseLevel(string(b))
	if err == nil {
		*l = v
	}
	return err
}

// ParseLevel parses a level's name (case-insensitive); "" and "auto" mean Detected().
func ParseLevel(s string) (Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return detected, nil
	case "generic", "go", "purego":
		return Generic, nil
	case "avx2":
		return AVX2, nil
	case "avx512":
		return AVX512, nil
	}
	return detected, fmt.Errorf("%s=%q: want generic, avx2, avx512 or auto", Env, s)
}

var (
	detected      = detect()
	current, perr = fromEnv()
)

func fromEnv() (Level, error) {
	l, err := ParseLevel(os.Getenv(Env))
	return min(l, detected), err
}

// Detected returns the best level the processor and the operating system support.
func Detected() Level { return detected }

// Current returns the level the kernels use: Detected capped by LOCUS_CPU, read once at
// start.
func Current() Level { return current }

// Err reports an unparsable LOCUS_CPU (the kernels then use Detected).
func Err() error { return perr }

// Allows reports whether the kernels may use level l.
func Allows(l Level) bool { return l <= current }
