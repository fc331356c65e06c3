package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"phxgo/internal/cli"
)

// Bad flags are refused at start with exit 2 and the flag's name, before
// anything listens or dials (the last case is the first check after the
// flags: TLS).
func TestFlagValidation(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(dir, "open")
	if err := os.WriteFile(open, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := "-listen 127.0.0.1:0 -binlogd 127.0.0.1:1 -http 127.0.0.1:0 -admin-password-file " + pw
	for _, tc := range []struct {
		args string
		code int
		want string // in the error
	}{
		{"-h", 0, ""},
		{"--help", 0, ""},
		{good + " -nosuchflag", 2, "-nosuchflag"},
		{good + " stray", 2, "unexpected arguments"},
		{good + " -binlogd 36011", 2, "-binlogd"},
		{good + " -binlogd :36011", 2, "-binlogd"},
		{good + " -binlogd 127.0.0.1:0", 2, "-binlogd"},
		{good + " -procs -3", 2, "-procs"},
		{good + " -listen 36090", 2, "-listen"},
		{good + " -rwsplit-listen 36091", 2, "-rwsplit-listen"},
		{good + " -http 9307", 2, "-http"},
		{good + " -poll 0s", 2, "-poll"},
		{"-listen 127.0.0.1:0 -binlogd 127.0.0.1:1", 2, "-admin-password-file is required"},
		{good + " -admin-password-file " + filepath.Join(dir, "missing"), 2, "-admin-password-file"},
		{good + " -admin-password-file " + open, 2, "-admin-password-file"},
		{good + " -mode bogus", 2, "-mode"},
		{good + " -source-ip nope", 2, "-source-ip"},
		{good + " -allow nope", 2, "-allow"},
		{good, 2, "no TLS"},
	} {
		err := run(strings.Fields(tc.args))
		if got := cli.Code(err); got != tc.code || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("sqlproxy %s: exit %d (%v); want %d and %q", tc.args, got, err, tc.code, tc.want)
		}
	}
}

// sqlproxy with its log's reader gone must not die by SIGPIPE: it runs
// as itself (TestMain) with stdout and stderr on a closed pipe; the bad
// -procs makes it write an error and exit 2 at once.
func TestSurvivesClosedStderr(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer w.Close()
	cmd := exec.Command(os.Args[0], "-procs", "-3")
	cmd.Env = append(os.Environ(), "PHXGO_TEST_RUN_SQLPROXY=1")
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("sqlproxy -procs -3: %v, want exit 2", err)
	}
	if ws := ee.Sys().(syscall.WaitStatus); ws.Signaled() || ee.ExitCode() != 2 {
		t.Fatalf("sqlproxy with a closed stderr: %v (signal %v), want exit 2", err, ws.Signal())
	}
}
