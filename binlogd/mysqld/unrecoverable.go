package mysqld

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrUnrecoverable means mariadbd refused to start because InnoDB cannot
// recover its datadir: its error log names corruption, not a setting, a
// port or a lock. Starting it again reads the same files and fails the
// same way, so the caller stops retrying and the node needs a new copy
// of the data (binlogd reseed). The error's text carries the log line.
//
// Seen on MariaDB 10.11 in the Jepsen power nemesis, on a disk model
// (lazyfs) that then lost a new .ibd's fallocate'd size where ext4 keeps
// it; on real disks, damaged or lost files end the same way:
//
//	InnoDB: Missing FILE_CREATE, FILE_DELETE or FILE_MODIFY before FILE_CHECKPOINT for tablespace 5
//	InnoDB: Plugin initialization aborted with error Data structure corruption
var ErrUnrecoverable = errors.New("mysqld: InnoDB cannot recover the datadir")

// unrecoverableSigns are error-log texts of InnoDB refusing a datadir it
// cannot recover. Each is specific to damaged files: a wrong setting, a
// port in use or a held lock print other texts and stay retryable.
var unrecoverableSigns = [][]byte{
	[]byte("Plugin initialization aborted with error Data structure corruption"),
	[]byte("Missing FILE_CREATE, FILE_DELETE or FILE_MODIFY before FILE_CHECKPOINT"),
	[]byte("InnoDB: No valid checkpoint was found"), // the redo log's header is gone
	[]byte("InnoDB: Database page corruption on disk or a failed read"),
	[]byte("InnoDB: Plugin initialization aborted with error Page read from tablespace is corrupted"),
}

// unrecoverableIn returns an ErrUnrecoverable naming the first [ERROR]
// line of InnoDB in log (what one failed start wrote), or nil if log
// shows none of unrecoverableSigns.
func unrecoverableIn(log []byte) error {
	found := false
	for _, s := range unrecoverableSigns {
		if bytes.Contains(log, s) {
			found = true
			break
		}
	}
	if !found {
		return nil
	}
	first := ""
	for _, l := range bytes.Split(log, []byte("\n")) {
		if bytes.Contains(l, []byte("[ERROR] InnoDB:")) {
			first = string(bytes.TrimSpace(l[bytes.Index(l, []byte("InnoDB:")):]))
			break
		}
	}
	return fmt.Errorf("%w: %s", ErrUnrecoverable, first)
}

// logSize is the error log's size now: where a start's own lines begin.
func (i *Instance) logSize() int64 {
	fi, err := os.Stat(i.ErrorLog())
	if err != nil {
		return 0
	}
	return fi.Size()
}

// logSince reads the error log from off (at most 1 MiB): one start's lines.
func (i *Instance) logSince(off int64) []byte {
	f, err := os.Open(i.ErrorLog())
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() < off {
		off = 0 // rotated or truncated meanwhile
	}
	b, _ := io.ReadAll(io.NewSectionReader(f, off, 1<<20))
	return b
}
