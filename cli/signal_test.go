//go:build unix

package cli

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHelperProcess is not a test: run as a child by the tests below, it runs the
// command line after "--", or blocks after a first interrupt for LOCUS_HELPER=block.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv("LOCUS_HELPER")
	if mode == "" {
		t.Skip("helper process")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	if mode == "block" {
		ctx, _ := interruptible()
		os.Stdout.WriteString("ready\n")
		<-ctx.Done()
		select {} // a cleanup that never ends: only a second signal stops it
	}
	os.Exit(Main(args, os.Stdout, os.Stderr))
}

// helper starts the test binary as a child running mode with args.
func helper(t *testing.T, mode string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestHelperProcess$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), "LOCUS_HELPER="+mode)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &out
}

// TestCtrlCStopsEvaluation: an evaluation that would take minutes stops within a second
// of SIGINT, with a one-line message and exit status 1.
func TestCtrlCStopsEvaluation(t *testing.T) {
	run := charRun(t)
	cmd, out := helper(t, "run", "eval", "-ckpt", run, "-n", strconv.Itoa(maxEvalN))
	time.Sleep(700 * time.Millisecond)
	t0 := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	took := time.Since(t0)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 || !strings.Contains(out.String(), "evaluation interrupted") {
		t.Fatalf("eval after SIGINT: %v\n%s", err, out)
	}
	if took > 2*time.Second {
		t.Errorf("eval took %v to stop after SIGINT", took)
	}
}

// TestSecondCtrlCExitsAtOnce: after the first SIGINT the default action is back, so a
// second one ends a process whose cleanup hangs.
func TestSecondCtrlCExitsAtOnce(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "LOCUS_HELPER=block")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
		cmd.Process.Kill()
		t.Fatalf("helper: %q, %v", line, err)
	}
	cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(200 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGINT {
			t.Errorf("after two SIGINTs: %v, want death by SIGINT", err)
		}
	case <-time.After(3 * time.Second):
		cmd.Process.Kill()
		t.Fatal("a second SIGINT did not end the process")
	}
}
