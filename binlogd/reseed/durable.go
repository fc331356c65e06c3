package reseed

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// syncTree fsyncs every file and directory under dir, and dir's parent:
// mbstream and mariadb-backup --prepare leave most of a copy in the page
// cache, and a datadir swapped in before it is on disk can come back
// from a power loss half-written, i.e. as a node whose InnoDB cannot
// start (mysqld.ErrUnrecoverable) right after it was reseeded.
func syncTree(dir string) error {
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			return nil // sockets, links: nothing to flush
		}
		return syncPath(p)
	})
	if err == nil {
		err = syncPath(filepath.Dir(dir))
	}
	if err != nil {
		return fmt.Errorf("reseed: flush the copy to disk: %w", err)
	}
	return nil
}

func syncPath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
