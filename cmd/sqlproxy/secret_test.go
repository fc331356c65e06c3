package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadSecret: the admin password file must be 0600 (or stricter) and
// owned by the proxy's user or root; its owner could rewrite it whatever
// its mode.
func TestReadSecret(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "pw")
	if err := os.WriteFile(p, []byte("s3cret-password\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if pw, err := readSecret(p); err != nil || pw != "s3cret-password" {
		t.Fatalf("readSecret = %q, %v", pw, err)
	}
	if err := os.Chmod(p, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := readSecret(p); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a group-readable file: %v", err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		t.Skip("the owner case needs root to chown")
	}
	if err := os.Chown(p, 12345, 12345); err != nil {
		t.Fatal(err)
	}
	// Root may read a file of another owner, but the proxy refuses it
	// unless it runs as that owner: root runs it here, so root's own
	// files pass and uid 12345's do not.
	if _, err := readSecret(p); err == nil || !strings.Contains(err.Error(), "owned by uid 12345") {
		t.Fatalf("a file owned by another user: %v", err)
	}
}
