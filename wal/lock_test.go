package wal

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

const (
	lockChildEnv  = "WAL_TEST_LOCK_CHILD"
	crashChildEnv = "WAL_TEST_CRASH_CHILD"
)

// TestMain doubles as the child process of TestLockedByOtherProcess and
// TestKillNineKeepsAckedSaves, selected by environment variable.
func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir)
	}
	if dir := os.Getenv(lockChildEnv); dir != "" {
		_, err := Open(dir, quietOptions())
		fmt.Print(err)
		if errors.Is(err, ErrLocked) {
			os.Exit(0)
		}
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func TestLockedByOtherProcess(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, dir, quietOptions())
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), lockChildEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child Open: %v, output %q; want ErrLocked", err, out)
	}
	if !strings.Contains(string(out), dir) {
		t.Fatalf("error %q does not name the directory", out)
	}
	// Once released, the directory opens again.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	openTest(t, dir, quietOptions())
}
