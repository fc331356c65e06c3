package wal

import (
	"fmt"
	"sync"
)

// Zero-ahead: a frame appended at a segment's end grows the file, so its
// group's fdatasync must also commit the new size and extents through
// the filesystem's journal. On this project's test host (ext4 on virtio)
// that made each sync 0.6-0.9 ms and 160 µs of CPU against 0.35 ms and
// 93 µs for a frame written over zeros already in the file, and a
// commit waits for two of them (the leader's and a voter's). So the
// commit goroutine keeps ZeroAheadBytes of zeros past the last frame:
// when a frame would run past them it writes the next ZeroAheadBytes of
// zeros first, and only that group's sync pays for the growth, once per
// ZeroAheadBytes of frames. (fallocate does not help: ext4 records
// preallocated extents as unwritten, and the first write into one is a
// journalled conversion, slower than the append.)
//
// The zeros are the end of the segment to every reader: walkSegment
// reports bytes that are all zeros up to the end of the file as a clean
// tail, which Open cuts from the newest segment and leaves in older ones,
// Inspect does not report, and no write ever follows in an older one.

// zeroChunk is the zero buffer zeroAhead writes from.
var zeroChunk = sync.OnceValue(func() []byte { return make([]byte, 256<<10) })

// zeroAhead makes sure the current segment holds written bytes up to
// end, where the next frame ends, by writing ZeroAheadBytes of zeros
// from end on (up to SegmentBytes) when end is past what is written.
// Commit goroutine only.
func (l *Log) zeroAhead(end uint64) error {
	ahead := l.opts.ZeroAheadBytes
	if ahead <= 0 || end <= l.segZero {
		return nil
	}
	to := min(end+uint64(ahead), uint64(l.opts.SegmentBytes))
	z := zeroChunk()
	for off := end; off < to; {
		n := min(uint64(len(z)), to-off)
		if _, err := l.segFile.WriteAt(z[:n], int64(off)); err != nil {
			return fmt.Errorf("wal: write zeros into segment %d at %d: %w", l.segID, off, err)
		}
		off += n
	}
	l.segZero = max(to, end)
	return nil
}
