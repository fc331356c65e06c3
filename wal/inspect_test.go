package wal

import (
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestInspectDamageUnderCheckpoint: bytes missing or bad under what
// Badger already holds (answered promises and votes) are damage, however
// they look (a cut at any point, zeros, a deleted file): Inspect must not
// call them a torn tail that binlogd cuts off by itself, since the node
// then cannot start (Open refuses) or cannot read its log.
func TestInspectDamageUnderCheckpoint(t *testing.T) {
	for name, c := range map[string]func(t *testing.T, dir string, ids []uint64){
		"newest cut to half": func(t *testing.T, dir string, ids []uint64) {
			path := filepath.Join(dir, segName(ids[len(ids)-1]))
			fi, _ := os.Stat(path)
			if err := os.Truncate(path, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
		},
		"newest cut at a frame boundary": func(t *testing.T, dir string, ids []uint64) {
			id := ids[len(ids)-1]
			starts := frameStarts(t, dir, id)
			if err := os.Truncate(filepath.Join(dir, segName(id)), int64(starts[len(starts)/2])); err != nil {
				t.Fatal(err)
			}
		},
		"newest zeroed": func(t *testing.T, dir string, ids []uint64) {
			patchFile(t, filepath.Join(dir, segName(ids[len(ids)-1])), func(b []byte) []byte { return make([]byte, len(b)) })
		},
		"first deleted": func(t *testing.T, dir string, ids []uint64) {
			if err := os.Remove(filepath.Join(dir, segName(ids[0]))); err != nil {
				t.Fatal(err)
			}
		},
		"older cut": func(t *testing.T, dir string, ids []uint64) {
			if err := os.Truncate(filepath.Join(dir, segName(ids[1])), 100); err != nil {
				t.Fatal(err)
			}
		},
		"older zeroed": func(t *testing.T, dir string, ids []uint64) {
			patchFile(t, filepath.Join(dir, segName(ids[1])), func(b []byte) []byte { return make([]byte, len(b)) })
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			ids := severalSegments(t, dir)
			c(t, dir, ids)
			r, err := Inspect(dir, quietOptions())
			if err != nil {
				t.Fatal(err)
			}
			var dmg []Problem
			for _, p := range r.Problems {
				if p.Damage() {
					dmg = append(dmg, p)
				}
			}
			if len(dmg) == 0 || !dmg[0].Applied {
				t.Fatalf("Inspect: problems %+v; want damage under what Badger holds", r.Problems)
			}
			// The premise: the node cannot use this log as it is.
			if err := openAndReadAll(dir); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open and read: %v, want ErrCorrupt", err)
			}
		})
	}
}

// TestInspectTornTailAfterCheckpoint: unanswered bytes after everything
// Badger holds stay a torn tail (not damage).
func TestInspectTornTailAfterCheckpoint(t *testing.T) {
	dir := t.TempDir()
	ids := severalSegments(t, dir)
	path := filepath.Join(dir, segName(ids[len(ids)-1]))
	patchFile(t, path, func(b []byte) []byte { return append(b, 0xde, 0xad, 0xbe, 0xef, 1, 2, 3) })
	r, err := Inspect(dir, quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Problems) != 1 || r.Problems[0].Damage() {
		t.Fatalf("problems %+v; want one torn tail", r.Problems)
	}
}

// TestInspectWritesNothing: inspection leaves every file as it was, even
// with an empty Badger file a power loss left (Open removes those).
func TestInspectWritesNothing(t *testing.T) {
	dir := t.TempDir()
	severalSegments(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "000099.vlog"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	before := hashDir(t, dir)
	r, err := Inspect(dir, quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Problems) != 0 {
		t.Fatalf("problems %+v on a healthy log", r.Problems)
	}
	after := hashDir(t, dir)
	for name, h := range before {
		if after[name] != h {
			t.Errorf("Inspect changed %s", name)
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("Inspect created %s", name)
		}
	}
}

func hashDir(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][32]byte{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = sha256.Sum256(b)
	}
	return out
}
