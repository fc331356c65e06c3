package wal

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/ristretto/v2/z"
)

// openBadger opens Badger in dir (Open, Inspect and Repair all come
// here). A damaged table file (.sst) makes Badger panic rather than fail
// (table.initBiggestAndSmallest re-panics whatever it recovers), and it
// does so in a goroutine of its own, where no recover of ours reaches.
// So every table is first opened here, in this goroutine, with the panic
// turned into ErrCorrupt naming the file; Badger's own open is guarded
// too. The check verifies every table's checksums as well (Badger skips
// them by default, then panics on a bad block at the first read): the
// tables hold metadata and references only (values live in segments),
// so reading them once per open is cheap. readOnly opens Badger without
// writing anything (inspection); then call release after closing db.
func openBadger(dir string, opts Options, readOnly bool) (db *badger.DB, release func(), err error) {
	if err := checkTables(dir); err != nil {
		return nil, nil, err
	}
	if !readOnly {
		db, err := guardedOpen(dir, opts.badger(dir))
		return db, func() {}, err
	}
	bdir, cleanup, err := withoutEmptyFiles(dir) // powerloss.go's files
	if err != nil {
		return nil, nil, err
	}
	// Badger's Close opens its directory again: keep it until then.
	if db, err = guardedOpen(dir, opts.badger(bdir).WithReadOnly(true)); err != nil {
		cleanup()
		return nil, nil, err
	}
	return db, cleanup, nil
}

// errBadgerDamaged is what an operator reads when Badger's files cannot be
// opened: what is wrong and what to do (README's failure table and
// binlogd wal-repair say how to reseed).
const errBadgerDamaged = "Badger's table files are damaged; this node's Paxos log cannot be read: " +
	"reseed it from its peers (binlogd wal-repair prints the procedure)"

func guardedOpen(dir string, bo badger.Options) (db *badger.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("%w: %s: %s (badger panicked: %v)", ErrCorrupt, dir, errBadgerDamaged, oneLine(r))
		}
	}()
	db, err = badger.Open(bo)
	if err != nil {
		return nil, fmt.Errorf("wal: open badger in %s: %w", dir, err)
	}
	return db, nil
}

// checkTables opens every .sst file in dir read-only, as Badger would,
// and closes it again.
func checkTables(dir string) error {
	paths, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	for _, p := range paths {
		if err := checkTable(p); err != nil {
			return fmt.Errorf("%w: %s: %s: %w", ErrCorrupt, p, errBadgerDamaged, err)
		}
	}
	return nil
}

func checkTable(path string) (err error) {
	mf, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("badger panicked reading it: %v", oneLine(r))
			_ = mf.Close(-1)
		}
	}()
	// OpenTable closes mf itself when it fails.
	t, err := table.OpenTable(mf, table.Options{ChkMode: options.OnTableRead, Compression: options.None})
	if err != nil {
		return err
	}
	return t.MmapFile.Close(-1) // never DecrRef: at zero it deletes the file
}

// oneLine shortens a recovered panic value to one line (Badger's run
// over several, with a dump of the table's footer).
func oneLine(r any) string {
	s := strings.Join(strings.Fields(fmt.Sprint(r)), " ")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// withoutEmptyFiles returns a directory Badger can open read-only in
// place of dir: dir itself, or, when dir holds empty .mem or .vlog files
// (which Open removes first, powerloss.go, and which read-only Badger
// cannot open), a temporary directory of symlinks to every other file.
func withoutEmptyFiles(dir string) (string, func(), error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", nil, fmt.Errorf("wal: %w", err)
	}
	empty := map[string]bool{}
	for _, e := range ents {
		name := e.Name()
		if !e.Type().IsRegular() || (!strings.HasSuffix(name, memFileExt) && !strings.HasSuffix(name, ".vlog")) {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.Size() == 0 {
			empty[name] = true
		}
	}
	if len(empty) == 0 {
		return dir, func() {}, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", nil, fmt.Errorf("wal: %w", err)
	}
	tmp, err := os.MkdirTemp("", "wal-inspect-")
	if err != nil {
		return "", nil, fmt.Errorf("wal: %w", err)
	}
	cleanup := func() { os.RemoveAll(tmp) }
	for _, e := range ents {
		if !e.Type().IsRegular() || empty[e.Name()] {
			continue
		}
		if err := os.Symlink(filepath.Join(abs, e.Name()), filepath.Join(tmp, e.Name())); err != nil {
			cleanup()
			return "", nil, fmt.Errorf("wal: %w", err)
		}
	}
	return tmp, cleanup, nil
}
