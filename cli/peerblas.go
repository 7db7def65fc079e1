package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sync"

	"github.com/locusml/locus/internal/simd"
)

// The PyTorch peer's matrix products run in OpenBLAS, which picks its kernels by the
// processor's model number. An OpenBLAS older than the processor (Debian 12's 0.3.21 on
// an Intel Emerald Rapids, family 6 model 207) does not know the model and falls back to
// its SSE3 "Prescott" kernels: measured here, a 768×384×1536 product ran at 26 GFLOP/s on
// one core against 120–150 with OPENBLAS_CORETYPE=SkylakeX, and the peer's whole step was
// 4–5× slower. A ratio against that measures OpenBLAS's table, not PyTorch, so the peer's
// environment is checked before a side-by-side run and, where OpenBLAS fell back, set to
// the kernels the processor has.

// peerBLAS is what the check found: the OpenBLAS core the peer runs with, and the
// OPENBLAS_CORETYPE to add to its environment.
type peerBLAS struct {
	Core     string // the OpenBLAS core the peer's products use ("" where not OpenBLAS or not said)
	Picked   string // the core OpenBLAS picked by itself, where Locus overrode it
	CoreType string // the OPENBLAS_CORETYPE Locus sets ("" for none)
}

// Env is the peer's environment: this process's, with OPENBLAS_CORETYPE where the check
// set it.
func (b peerBLAS) Env() []string {
	env := os.Environ()
	if b.CoreType != "" {
		env = append(env, "OPENBLAS_CORETYPE="+b.CoreType)
	}
	return env
}

// String says which core the peer ran with, for the summary line.
func (b peerBLAS) String() string {
	switch {
	case b.Core == "":
		return "OpenBLAS core not reported"
	case b.Picked != "":
		return fmt.Sprintf("OpenBLAS core %s (set by Locus: OpenBLAS picked %s for this processor)", b.Core, b.Picked)
	}
	return "OpenBLAS core " + b.Core
}

// vectorCores are the OpenBLAS cores whose single-precision kernels use AVX2 and FMA or
// AVX-512; every other core is a fallback on a processor with AVX2.
var vectorCores = map[string]bool{"Haswell": true, "Zen": true, "SkylakeX": true, "Cooperlake": true, "SapphireRapids": true}

var coreLine = regexp.MustCompile(`(?m)^Core: (\S+)`)

// blasCore runs python with OPENBLAS_VERBOSE=2 to import torch and multiply two matrices,
// and returns the OpenBLAS core named on its stderr: "" where none is named or the
// check did not run (the peer's own run then says what is wrong with the interpreter).
func blasCore(python, coreType string) string {
	cmd := exec.Command(python, "-c", "import torch; torch.ones(64, 64) @ torch.ones(64, 64)")
	cmd.Env = append(peerBLAS{CoreType: coreType}.Env(), "OPENBLAS_VERBOSE=2")
	var errBuf bytes.Buffer
	cmd.Stderr = &errBuf
	if cmd.Run() != nil {
		return ""
	}
	if m := coreLine.FindSubmatch(errBuf.Bytes()); m != nil {
		return string(m[1])
	}
	return ""
}

var peerBLASOnce sync.Map // python → func() peerBLAS

// checkPeerBLAS returns what the peer run by python is to run with: where OpenBLAS fell
// back to pre-AVX2 kernels on a processor with AVX2 (and OPENBLAS_CORETYPE is not set),
// OPENBLAS_CORETYPE SkylakeX (AVX-512) or Haswell (AVX2), said on stderr. The check runs
// once per interpreter and process.
func checkPeerBLAS(python string, stderr io.Writer) peerBLAS {
	f, _ := peerBLASOnce.LoadOrStore(python, sync.OnceValue(func() peerBLAS {
		core := blasCore(python, "")
		b := peerBLAS{Core: core}
		if _, set := os.LookupEnv("OPENBLAS_CORETYPE"); set || core == "" || vectorCores[core] {
			return b
		}
		want := map[simd.Level]string{simd.AVX512: "SkylakeX", simd.AVX2: "Haswell"}[simd.Detected()]
		if want == "" {
			return b
		}
		if got := blasCore(python, want); got != want {
			fmt.Fprintf(stderr, "torch peer: OpenBLAS runs its %s kernels on this processor and would not take OPENBLAS_CORETYPE=%s (it ran %s): its times are of pre-AVX2 code\n", core, want, got)
			return b
		}
		fmt.Fprintf(stderr, "torch peer: OpenBLAS does not know this processor and picked its %s (pre-AVX2) kernels; running the peer with OPENBLAS_CORETYPE=%s\n", core, want)
		return peerBLAS{Core: want, Picked: core, CoreType: want}
	}))
	return f.(func() peerBLAS)()
}
