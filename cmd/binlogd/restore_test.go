package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSetConfigKeyKeepsTheFile is the red-team finding of session 37:
// restore -new-cluster rewrote the config through its own temporary
// name (following one left there) and replaced a symlinked config with a
// plain file. It now writes the link's target, keeps its mode, and
// refuses a temporary file that already exists.
func TestSetConfigKeyKeepsTheFile(t *testing.T) {
	noDial(t)
	root := t.TempDir()
	out := filepath.Join(root, "o")
	if _, err := initArgs(t, "-out", out, "-hosts", "10.9.0.1,10.9.0.2,10.9.0.3"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, "node1", "binlogd.json"))
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(out, "node1", "real.json") // beside its certificates
	if err := os.WriteFile(real, b, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(real, 0o640); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "binlogd.json")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if err := setConfigKey(link, "base_gtid", "0-1-500"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the symlinked config is no longer a symlink: %v %v", fi.Mode(), err)
	}
	fi, err := os.Stat(real)
	if err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("the config's mode after the rewrite: %v %v, want 0640", fi.Mode().Perm(), err)
	}
	if b, _ := os.ReadFile(real); !strings.Contains(string(b), `"base_gtid": "0-1-500"`) {
		t.Fatalf("the link's target lacks base_gtid:\n%s", b)
	}

	if err := os.WriteFile(real+".tmp", []byte("left here"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := setConfigKey(link, "base_gtid", "0-1-777"); err == nil || !strings.Contains(err.Error(), ".tmp") {
		t.Fatalf("a temporary file already there: %v, want a refusal naming it", err)
	}
	if b, _ := os.ReadFile(real + ".tmp"); string(b) != "left here" {
		t.Fatalf("the file already there was overwritten: %q", b)
	}
}
