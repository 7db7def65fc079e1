package simd

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestParseLevel(t *testing.T) {
	for s, want := range map[string]Level{"generic": Generic, "AVX2": AVX2, " avx512 ": AVX512, "purego": Generic, "": Detected(), "auto": Detected()} {
		got, err := ParseLevel(s)
		if err != nil || got != want {
			t.Errorf("ParseLevel(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	if _, err := ParseLevel("sse"); err == nil || !strings.Contains(err.Error(), Env) {
		t.Errorf("ParseLevel(sse): err %v, want one naming %s", err, Env)
	}
	var l Level
	if err := l.UnmarshalText([]byte("avx2")); err != nil || l != AVX2 {
		t.Errorf("UnmarshalText(avx2) = %v, %v", l, err)
	}
	if b, _ := AVX512.MarshalText(); string(b) != "avx512" {
		t.Errorf("MarshalText = %q", b)
	}
}

// TestEnvCapsLevel runs this test binary under each LOCUS_CPU value: the level is the
// value capped by what the machine has, and a bad value falls back to Detected with Err.
func TestEnvCapsLevel(t *testing.T) {
	if os.Getenv("SIMD_CHILD") != "" {
		os.Stdout.WriteString("level=" + Current().String() + " allows2=" + map[bool]string{true: "y", false: "n"}[Allows(AVX2)] + "\n")
		if Err() != nil {
			os.Stdout.WriteString("err\n")
		}
		return
	}
	for env, want := range map[string]string{
		"generic": "level=generic allows2=n",
		"avx2":    "level=" + min(AVX2, Detected()).String(),
		"avx512":  "level=" + Detected().String(),
		"bogus":   "err",
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestEnvCapsLevel$")
		cmd.Env = append(os.Environ(), "SIMD_CHILD=1", Env+"="+env)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("%s=%s: %q, %v; want %q", Env, env, out, err, want)
		}
	}
}
