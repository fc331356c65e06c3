package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// bin is this package built once (TestMain).
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "jepsen-test-")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "jepsen")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// exitCode runs bin with args and stdout/stderr on w; a death by a signal
// fails the test.
func exitCode(t *testing.T, w *os.File, args ...string) int {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = w, w
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("jepsen %q: %v", args, err)
	}
	if ee != nil {
		if ws := ee.Sys().(syscall.WaitStatus); ws.Signaled() {
			t.Fatalf("jepsen %q: killed by %v", args, ws.Signal())
		}
		return ee.ExitCode()
	}
	return 0
}

// jepsen | head: the harness must outlive a closed stderr/stdout (and go
// on to clean up) instead of dying by SIGPIPE. The bad -quiet makes it
// write an error and exit 2 before starting anything.
func TestSurvivesClosedStderr(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // the reader went away
	defer w.Close()
	if code := exitCode(t, w, "-quiet", "-1s"); code != 2 {
		t.Fatalf("jepsen -quiet -1s with a closed stderr: exit %d, want 2", code)
	}
}

// The command line keeps internal/cli's exit codes; none of these cases
// starts a cluster (a stray argument used to run the default workload).
func TestExitCodes(t *testing.T) {
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	for _, tc := range []struct {
		args string
		code int
	}{
		{"-h", 0},
		{"--help", 0},
		{"-nosuchflag", 2},
		{"nosuchcmd", 2},
		{"-time 1s stray", 2},
		{"failover -h", 0},
		{"failover -nosuchflag", 2},
		{"failover -rounds 1 stray", 2},
	} {
		if code := exitCode(t, devnull, strings.Fields(tc.args)...); code != tc.code {
			t.Errorf("jepsen %s: exit %d, want %d", tc.args, code, tc.code)
		}
	}
}
