package recovery

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// flagsOffset is where the FORMAT_DESCRIPTION event's 2-byte header flags
// start in a binlog file: after the 4-byte magic, the event header holds
// timestamp (4), type (1), server_id (4), event_size (4) and log_pos (4).
const flagsOffset = 4 + 17

// markInUse sets LOG_EVENT_BINLOG_IN_USE_F on path's FORMAT_DESCRIPTION
// event and fsyncs, as if the server had crashed while writing the file.
//
// Why: MariaDB runs its binlog crash recovery (the XID scan that rolls back
// prepared InnoDB transactions absent from the binlog) only when the newest
// binlog still has this flag (MYSQL_BIN_LOG::do_binlog_recovery). When the
// cut leaves as newest a file the server had rotated away from, that file
// was closed cleanly and its flag is clear: the server would skip recovery
// and refuse to start with the cut transactions still prepared ("Found N
// prepared transactions! ... --tc-heuristic-recover").
//
// The event's CRC32 stays valid: MariaDB computes and verifies the FD
// event's checksum with this flag cleared (it clears the flag on close by
// rewriting this one byte, without touching the checksum).
func markInUse(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, flagsOffset+2)
	if _, err := io.ReadFull(f, head); err != nil {
		return fmt.Errorf("recovery: %s: %w", path, err)
	}
	if string(head[:4]) != string(magic) || head[4+4] != typeFormatDesc {
		return fmt.Errorf("%w: %s does not start with a format description", ErrNotBinlog, path)
	}
	if head[flagsOffset]&logInUse != 0 {
		return nil
	}
	if _, err := f.WriteAt([]byte{head[flagsOffset] | logInUse}, flagsOffset); err != nil {
		return fmt.Errorf("recovery: mark %s in use: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("recovery: mark %s in use: %w", path, err)
	}
	return nil
}
