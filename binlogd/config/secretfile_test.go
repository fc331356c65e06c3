package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func savedCredentials(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "cred.json")
	if err := SaveCredentials(p, Credentials{CaptureUser: "c", CapturePassword: "p", AppUser: "a", AppPassword: "q"}); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCredentialsFileMode: any permission for group or others is refused
// with the file, its mode and the fix; 0600 and 0400 are read.
func TestCredentialsFileMode(t *testing.T) {
	p := savedCredentials(t)
	for _, mode := range []os.FileMode{0o640, 0o620, 0o610, 0o604, 0o602, 0o601, 0o660, 0o644} {
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		_, err := loadCredentials(p, os.Geteuid())
		want := []string{p, fmt.Sprintf("has mode %04o", mode), "chmod 600 " + p}
		if !errors.Is(err, ErrInvalid) || !containsAll(err.Error(), want...) {
			t.Fatalf("mode %04o: %v, want an error with %q", mode, err, want)
		}
	}
	for _, mode := range []os.FileMode{0o600, 0o400} {
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if _, err := loadCredentials(p, os.Geteuid()); err != nil {
			t.Fatalf("mode %04o: %v", mode, err)
		}
	}
}

// TestCredentialsFileOwner: the file must be owned by the user binlogd
// runs as, or root; `init -credentials` (LoadCredentials) takes any
// owner.
func TestCredentialsFileOwner(t *testing.T) {
	p := savedCredentials(t)
	me := os.Geteuid()
	other := me + 4242 // a process running as another user than the owner
	if me == 0 {
		// root owns the file: allowed for anyone. Give it to someone else.
		if _, err := loadCredentials(p, 4242); err != nil {
			t.Fatalf("a root-owned file, read by uid 4242: %v", err)
		}
		if err := os.Chown(p, 4242, -1); err != nil {
			t.Fatal(err)
		}
		other = 0
	}
	_, err := loadCredentials(p, other)
	if !errors.Is(err, ErrInvalid) || !containsAll(err.Error(), p, "is owned by", "binlogd runs as", "or root", "chown ") {
		t.Fatalf("file of another user: %v", err)
	}
	t.Log(err)
	if _, err := LoadCredentials(p); err != nil {
		t.Fatalf("LoadCredentials (any owner): %v", err)
	}
	if me == 0 {
		// The daemon's path: the config's file, checked against the euid.
		c := &Config{CredentialsFile: p}
		if _, err := c.LoadCredentials(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "owned by uid 4242") {
			t.Fatalf("Config.LoadCredentials of uid 4242's file, as root: %v", err)
		}
	}
}

// TestSaveCredentialsReplaces: saving over a file with a wider mode (or,
// as root, another owner) leaves a 0600 file of the writer's, which is
// what binlogd then reads.
func TestSaveCredentialsReplaces(t *testing.T) {
	p := savedCredentials(t)
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(p, 4242, 4242); err != nil {
			t.Fatal(err)
		}
	}
	if err := SaveCredentials(p, Credentials{CaptureUser: "c", CapturePassword: "p2", AppUser: "a", AppPassword: "q"}); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 || int(st.Sys().(*syscall.Stat_t).Uid) != os.Geteuid() {
		t.Fatalf("after SaveCredentials: mode %04o, owner %d", st.Mode().Perm(), st.Sys().(*syscall.Stat_t).Uid)
	}
	c := &Config{CredentialsFile: p}
	if cr, err := c.LoadCredentials(); err != nil || cr.CapturePassword != "p2" {
		t.Fatalf("%+v %v", cr, err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(p), ".*tmp*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
