package wal

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// dropEmptyBadgerFiles removes Badger memtable (.mem) and value log
// (.vlog) files of length zero before Badger opens dir.
//
// A power loss leaves one where Badger created the file and sized it with
// ftruncate, and the directory's entry reached the disk (Badger fsyncs the
// directory when it writes a table) but the size never did: the file had
// not been synced yet (this package syncs a memtable file only before the
// next rotation). Badger's Open refuses such
// a file ("Create a new file": it takes an empty file for one it has just
// created, and an existing one must not be new), so the node could never
// start again. A file with no byte holds nothing: removing it gives what
// Badger would have found had the power gone a moment before it was
// created. (ext4 usually commits the size with the name; POSIX does not
// promise it, and jepsen/lazyfs, the power nemesis's disk, does not.)
func dropEmptyBadgerFiles(dir string, log *slog.Logger) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	var errs []error
	for _, e := range ents {
		name := e.Name()
		if !e.Type().IsRegular() || (!strings.HasSuffix(name, memFileExt) && !strings.HasSuffix(name, ".vlog")) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			errs = append(errs, err)
			continue
		}
		if info.Size() != 0 {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			errs = append(errs, fmt.Errorf("wal: remove empty %s: %w", name, err))
			continue
		}
		log.Warn("wal: removed an empty Badger file (created, never synced, before a power loss)", "dir", dir, "file", name)
	}
	return errors.Join(errs...)
}
