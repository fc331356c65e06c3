package wal

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFileExists: the raw check agrees with os.Stat on a file, a
// directory, a missing name, a name under a missing directory, and a
// path no system call accepts (an embedded NUL).
func TestFileExists(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "00001.mem")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{
		file:                                true,
		dir:                                 true,
		filepath.Join(dir, "00002.mem"):     false,
		filepath.Join(dir, "none", "1.mem"): false,
		file + "\x00":                       false,
	} {
		if got := fileExists(path); got != want {
			t.Errorf("fileExists(%q) = %v, want %v", path, got, want)
		}
	}
}
