package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Preallocated segments (see doc.go, "Segment files on disk").
//
// A segment that grows by appending makes every fdatasync commit the
// file's new size through the filesystem's journal too; into blocks that
// are already written (zeros) an fdatasync writes only the data. fallocate
// alone is not enough: it leaves unwritten extents, and their conversion
// on first write is again a metadata change. So a segment is written full
// of zeros, and synced with its size, before it takes frames.

// zeroChunk is how many zeros zeroFill writes at once.
const zeroChunk = 1 << 20

// zeroFill writes n zero bytes at the start of f and makes them and the
// file's size durable.
func zeroFill(f *os.File, n int64) error {
	buf := make([]byte, min(n, zeroChunk))
	for off := int64(0); off < n; off += int64(len(buf)) {
		b := buf[:min(int64(len(buf)), n-off)]
		if _, err := f.WriteAt(b, off); err != nil {
			return fmt.Errorf("wal: zero-fill %s: %w", f.Name(), err)
		}
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("wal: sync zero-filled %s: %w", f.Name(), err)
	}
	return nil
}

// The next segment is prepared in the background while the current one
// fills, so no commit waits for its zeros: it is written as prepFilling,
// synced, and renamed to prepReady (directory synced); a rotation renames
// prepReady to the new segment's name. A prepFilling left by a crash is
// half-filled and removed at Open; a prepReady is whole and used.
const (
	prepFilling = "next-segment.filling"
	prepReady   = "next-segment.ready"
)

// prepare zero-fills the next segment in the background; the channel
// yields its outcome once.
func (s *segments) prepare() <-chan error {
	done := make(chan error, 1)
	go func() { done <- s.prepareNow() }()
	return done
}

func (s *segments) prepareNow() error {
	ready := filepath.Join(s.dir, prepReady)
	if fi, err := os.Stat(ready); err == nil && fi.Size() >= s.fill {
		return nil // left by an earlier Log on this directory
	}
	if !s.roomToFill() {
		return nil // the rotation appends to a new, empty segment
	}
	tmp := filepath.Join(s.dir, prepFilling)
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("wal: create %s: %w", tmp, err)
	}
	err = zeroFill(f, s.fill)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("wal: close %s: %w", tmp, cerr)
	}
	if err == nil {
		if err = os.Rename(tmp, ready); err != nil {
			err = fmt.Errorf("wal: rename %s: %w", tmp, err)
		}
	}
	if err == nil {
		err = syncDir(s.dir)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// takePrepared renames a prepared segment to segment id's name and opens
// it; ok=false: none is ready.
func (s *segments) takePrepared(id uint64) (f *os.File, ok bool, err error) {
	ready := filepath.Join(s.dir, prepReady)
	fi, err := os.Stat(ready)
	if errors.Is(err, os.ErrNotExist) || err == nil && fi.Size() < s.fill {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("wal: stat %s: %w", ready, err)
	}
	if _, err := os.Stat(s.path(id)); !errors.Is(err, os.ErrNotExist) {
		return nil, false, fmt.Errorf("wal: create segment %d: %s exists (%v)", id, s.path(id), err)
	}
	if err := os.Rename(ready, s.path(id)); err != nil {
		return nil, false, fmt.Errorf("wal: create segment %d from %s: %w", id, ready, err)
	}
	if f, err = os.OpenFile(s.path(id), os.O_RDWR, 0); err != nil {
		return nil, false, fmt.Errorf("wal: open segment %d: %w", id, err)
	}
	return f, true, nil
}

// dropHalfFilled removes what a crash left of a preparation.
func (s *segments) dropHalfFilled() error {
	if err := os.Remove(filepath.Join(s.dir, prepFilling)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("wal: remove %s: %w", prepFilling, err)
	}
	return nil
}

// roomToFill reports whether the filesystem can take a zero-filled
// segment and still keep Options.MinFreeBytes free. Where it cannot, the
// segment grows by appending instead (slower syncs, same safety), and the
// free-space guard (space.go) fails the log as the space runs out.
func (s *segments) roomToFill() bool {
	if s.minFree < 0 {
		return true
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(s.dir, &st); err != nil {
		return true // the writes will say what is wrong
	}
	return st.Bavail*uint64(st.Bsize) >= uint64(s.fill)+uint64(s.minFree)
}
