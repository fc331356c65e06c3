package version

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Each binary's -version prints "<binary> <version>-<12 hex of the
// revision>[-dirty] <go>" from the values a release build links in (make
// build passes them).
func TestVersionFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries")
	}
	const rev = "0123456789abcdef0123456789abcdef01234567"
	ld := "-X phxgo/binlogd/version.Version=v9.8.7 -X phxgo/binlogd/version.Revision=" + rev + " -X phxgo/binlogd/version.Modified=false"
	for _, b := range []struct {
		name string
		args []string
	}{
		{"binlogd", []string{"-version", "--version", "version"}},
		{"sqlproxy", []string{"-version", "--version"}},
	} {
		t.Run(b.name, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), b.name)
			if out, err := exec.Command("go", "build", "-ldflags", ld, "-o", bin, "phxgo/cmd/"+b.name).CombinedOutput(); err != nil {
				t.Fatalf("go build: %v\n%s", err, out)
			}
			want := b.name + " v9.8.7-0123456789ab " + runtime.Version() + "\n"
			for _, arg := range b.args {
				out, err := exec.Command(bin, arg).Output()
				if err != nil || string(out) != want {
					t.Fatalf("%s %s: %q, %v; want %q", b.name, arg, out, err, want)
				}
			}
		})
	}
}
