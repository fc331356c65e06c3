package wal

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// severalSegments writes 300 groups into 4 KiB segments and closes the
// log cleanly: Badger's replay then starts in the newest segment, and it
// refers into every older one.
func severalSegments(t *testing.T, dir string) []uint64 {
	t.Helper()
	opts := quietOptions()
	opts.SegmentBytes = 4 << 10
	l := openTest(t, dir, opts)
	for i := uint64(1); i <= 300; i++ {
		mustSave(t, l, Update{Accepted: []Accepted{acc(i, 1)}})
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	ids, err := segFiles(dir)
	if err != nil || len(ids) < 3 {
		t.Fatalf("segments %v, %v; want several", ids, err)
	}
	return ids
}

// openAndReadAll opens the log and reads every instance, as a starting
// node's applier would.
func openAndReadAll(dir string) error {
	l, err := Open(dir, quietOptions())
	if err != nil {
		return err
	}
	defer l.Close()
	hs := l.HardState()
	for i := hs.FirstIndex; i <= l.LastIndex(); i++ {
		if _, _, err := l.Get(i); err != nil {
			return err
		}
	}
	return nil
}

// TestDamagedTableIsAnError: a table file cut short makes Badger panic
// in a goroutine of its own; Open and Inspect must return ErrCorrupt
// naming the file instead of crashing the process.
func TestDamagedTableIsAnError(t *testing.T) {
	dir := t.TempDir()
	severalSegments(t, dir)
	tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	if len(tables) == 0 {
		t.Fatal("no table file after a clean close")
	}
	for name, damage := range map[string]func(b []byte) []byte{
		"cut":     func(b []byte) []byte { return b[:100] },
		"flipped": func(b []byte) []byte { b[len(b)/2] ^= 0xff; b[len(b)/2+1] ^= 0xff; return b },
	} {
		t.Run(name, func(t *testing.T) {
			d := t.TempDir()
			copyDir(t, dir, d)
			table := filepath.Join(d, filepath.Base(tables[0]))
			patchFile(t, table, damage)
			_, err := Inspect(d, quietOptions())
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), table) || !strings.Contains(err.Error(), "reseed") {
				t.Fatalf("Inspect: %v; want ErrCorrupt naming %s and the reseed", err, table)
			}
			if err := openAndReadAll(d); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), table) {
				t.Fatalf("Open: %v; want ErrCorrupt naming %s", err, table)
			}
		})
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
