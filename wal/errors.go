package wal

import "errors"

// Sentinel errors. Callers test them with errors.Is; the wrapping error
// names the instance, key or limit involved.
var (
	// ErrCorrupt: a stored record failed its checksum, length, version or
	// kind check. The data is never returned. The log needs repair (for an
	// acceptor: rejoin from a peer's snapshot).
	ErrCorrupt = errors.New("wal: corrupt record")
	// ErrCompacted: the index is below FirstIndex; it was truncated away
	// behind a snapshot. Fetch the snapshot instead.
	ErrCompacted = errors.New("wal: index compacted")
	// ErrClosed: the Log was closed. A Save that got it was not written.
	ErrClosed = errors.New("wal: closed")
	// ErrLocked: another process (or another Open in this one) holds the
	// directory.
	ErrLocked = errors.New("wal: directory in use by another process")
	// ErrInvalid: a bad argument (index 0, oversize value, truncation above
	// the applied index). Nothing was written.
	ErrInvalid = errors.New("wal: invalid argument")
	// ErrFailed: an earlier write or sync failed, so what is on disk is
	// unknown; every later call fails with it. Close and reopen the Log.
	// A Save that got it may or may not be durable.
	ErrFailed = errors.New("wal: log failed (a write, sync or free-space check); reopen")
	// ErrDiskFull: the filesystem's free space fell under
	// Options.MinFreeBytes (space.go). A Save that got it was not written;
	// the Log is failed (ErrFailed) like after a write error, and Open
	// refuses until space is freed.
	ErrDiskFull = errors.New("wal: disk full")
	// ErrReadOnly: the Log was opened with OpenReadOnly. Nothing was
	// written.
	ErrReadOnly = errors.New("wal: log opened read-only")
)
