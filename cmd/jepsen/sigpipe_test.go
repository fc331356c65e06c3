package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// jepsen | head: the harness must outlive a closed stderr/stdout (and go
// on to clean up) instead of dying by SIGPIPE. The bad -quiet makes it
// write an error and exit 2 before starting anything.
func TestSurvivesClosedStderr(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "jepsen")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // the reader went away
	defer w.Close()
	cmd := exec.Command(bin, "-quiet", "-1s")
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("jepsen -quiet -1s: %v, want exit 2", err)
	}
	if ws := ee.Sys().(syscall.WaitStatus); ws.Signaled() || ee.ExitCode() != 2 {
		t.Fatalf("jepsen -quiet -1s with a closed stderr: %v (signal %v), want exit 2", err, ws.Signal())
	}
}
