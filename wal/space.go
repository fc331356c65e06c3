package wal

import (
	"fmt"
	"syscall"
	"time"
)

// Free-space guard. A full disk must fail the Log cleanly (ErrDiskFull,
// then ErrFailed like any write error) rather than crash the process:
// Badger writes its memtable files and the tables it flushes and compacts
// through shared memory mappings, and a store into a mapping that the
// filesystem has no block for is a SIGBUS, which kills the process in the
// middle of a flush (seen: table.CreateTable during a memtable flush on a
// full tmpfs). So the commit goroutine looks at the free space before
// writing a group, at most once per spaceCheckBytes written or
// spaceCheckEvery (one statfs: a microsecond, next to a millisecond
// fsync), and fails once it is under Options.MinFreeBytes, which leaves
// Badger room for the flushes and compactions under way (the 256 MiB
// default: three 32 MiB memtables and an L0 compaction). Open checks too,
// before Badger opens, so a restart on a full disk fails with the reason
// instead of crashing in Badger's replay.
const (
	spaceCheckBytes = 1 << 20
	spaceCheckEvery = time.Second
)

type spaceGuard struct {
	bytes int64     // written since the last check
	next  time.Time // check again at the latest then
}

// checkSpace is called by the commit goroutine before it writes n bytes.
func (l *Log) checkSpace(n int64) error {
	if l.opts.MinFreeBytes < 0 {
		return nil
	}
	l.space.bytes += n
	if l.space.bytes < spaceCheckBytes && time.Now().Before(l.space.next) {
		return nil
	}
	l.space.bytes, l.space.next = 0, time.Now().Add(spaceCheckEvery)
	return freeSpace(l.dir, l.opts.MinFreeBytes)
}

// freeSpace fails with ErrDiskFull when dir's filesystem has less than
// min bytes available. If statfs itself fails it says nothing: the writes
// will.
func freeSpace(dir string, min int64) error {
	if min < 0 {
		return nil
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return nil
	}
	free := st.Bavail * uint64(st.Bsize)
	if free < uint64(min) {
		return fmt.Errorf("%w: %s has %d bytes free, under the %d the log keeps in reserve (Options.MinFreeBytes): free space on that filesystem", ErrDiskFull, dir, free, min)
	}
	return nil
}
