package main

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// -version prints "<binary> <version>-<12 hex of the revision>[-dirty] <go>"
// from the values a release build links in (make build passes them).
func TestVersionFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	const rev = "0123456789abcdef0123456789abcdef01234567"
	bin := filepath.Join(t.TempDir(), "binlogd")
	ld := "-X phxgo/binlogd/version.Version=v9.8.7 -X phxgo/binlogd/version.Revision=" + rev + " -X phxgo/binlogd/version.Modified=false"
	if out, err := exec.Command("go", "build", "-ldflags", ld, "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	want := "binlogd v9.8.7-0123456789ab " + runtime.Version() + "\n"
	for _, arg := range []string{"-version", "--version", "version"} {
		out, err := exec.Command(bin, arg).Output()
		if err != nil || string(out) != want {
			t.Fatalf("binlogd %s: %q, %v; want %q", arg, out, err, want)
		}
	}
}
