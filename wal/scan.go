package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Telling a torn tail from damage (see doc.go, "Crash recovery").
//
// A group is answered only after an fdatasync that covers it and every
// frame before it in its segment, so a crash can only damage frames that
// nothing after them made durable: the bytes a crash leaves unwritten are
// the END of the newest segment. Where the frames stop before the end of
// the file, walkSegment therefore looks for a valid frame further on:
//
//	none  a torn tail (a partial frame, garbage or zeros up to the end):
//	      never answered, cut off by Open
//	some  damage (a flipped bit, a zeroed block, a bad length): the frames
//	      after it may hold answered promises and votes, so Open refuses
//	      with a *DamageError naming the file and both offsets, and the
//	      operator decides (binlogd wal-repair)
//
// One case looks like damage without being one: with several groups
// written and not yet synced (Options.MaxSyncsInFlight, lazy groups), a
// power cut (not a process crash: the page cache keeps whole writes) may
// keep a later frame's blocks and lose an earlier one's. None of those
// frames was answered, but nothing on disk tells them from a flipped bit
// in the last frames, so Open refuses then too: refusing costs an
// operator's look (wal-repair shows how few frames follow, all at the
// end), while a wrong cut could forget a promise.
//
// Resync: a frame's body starts with its own segment id and byte offset,
// so a candidate at offset y is any y whose bytes y+8..y+24 read (segment,
// y); only those are checked in full (length, CRC32C, entries). Every
// offset after the bad one up to the end of the file is tried, 1 MiB at a
// time: a linear pass over at most one segment (SegmentBytes plus one
// frame), run only at Open and only when the frames stop before the end
// of the file. A value whose bytes happen to form a whole frame naming this
// segment and its own offset, with a valid checksum, is the one way to be
// fooled; it does not happen by accident.

// DamageError: bytes in a segment that are not a frame, followed by a
// frame that is. It wraps ErrCorrupt.
type DamageError struct {
	Path    string // the segment file
	Segment uint64
	Offset  uint64 // where the damaged bytes start (the end of the valid frames before)
	Reason  error  // what is there: a bad checksum, a bad length, zeros
	Next    uint64 // the offset of the first valid frame after Offset
}

func (e *DamageError) Error() string {
	return fmt.Sprintf("%v: segment file %s, byte offset %d: %v; a valid frame follows at offset %d, so this is damage, not a torn write: "+
		"refusing to drop what follows (it may hold answered promises and votes); see binlogd wal-repair",
		ErrCorrupt, e.Path, e.Offset, e.Reason, e.Next)
}

func (e *DamageError) Unwrap() error { return ErrCorrupt }

// segTail: the bytes from off to the end of a segment hold no valid frame.
type segTail struct {
	off    uint64
	zeros  bool  // they start with a zero frame header (never written)
	reason error // why the bytes at off are not a frame
}

// errZeros is the reason of a tail that starts with a zero header.
var errZeros = errors.New("zeros where a frame header should be")

// walkSegment reads the frames of segment seg (r holds size bytes, path
// names it in errors) from off on and calls apply with each (apply may be
// nil). It returns the torn tail, if the frames stop before the end of the
// file and nothing valid follows; a *DamageError if something valid does;
// other errors are I/O errors or apply's.
func walkSegment(r io.ReaderAt, path string, size, seg, off uint64, apply func(es []entry, refs []uint64, next uint64) error) (*segTail, error) {
	for {
		es, refs, next, err := readFrame(r, size, seg, off)
		var reason error
		switch {
		case err == nil:
			if apply != nil {
				if err := apply(es, refs, next); err != nil {
					return nil, err
				}
			}
			off = next
			continue
		case errors.Is(err, errFrameEnd) && off >= size:
			return nil, nil
		case errors.Is(err, errFrameEnd):
			reason = errZeros
		case errors.Is(err, errBadRecord):
			reason = err
		default:
			return nil, fmt.Errorf("wal: read segment %s at offset %d: %w", path, off, err)
		}
		at, found, err := findFrame(r, size, seg, off+1)
		if err != nil {
			return nil, fmt.Errorf("wal: read segment %s after offset %d: %w", path, off, err)
		}
		if found {
			return nil, &DamageError{Path: path, Segment: seg, Offset: off, Reason: reason, Next: at}
		}
		return &segTail{off: off, zeros: reason == errZeros, reason: reason}, nil
	}
}

// scanChunk is how much of a segment findFrame reads at once.
const scanChunk = 1 << 20

// findFrame returns the offset of the first valid frame of segment seg at
// or after from (see "Resync" above).
func findFrame(r io.ReaderAt, size, seg, from uint64) (uint64, bool, error) {
	const probe = frameHeader + 16 // header, then the body's segment and offset
	buf := make([]byte, scanChunk+probe)
	for base := from; base+probe <= size; base += scanChunk {
		n := min(uint64(len(buf)), size-base)
		if m, err := r.ReadAt(buf[:n], int64(base)); uint64(m) < n {
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			return 0, false, err
		}
		b := buf[:n]
		for p := 0; p+probe <= len(b) && p < scanChunk; p++ {
			if binary.BigEndian.Uint64(b[p+frameHeader:]) != seg || binary.BigEndian.Uint64(b[p+frameHeader+8:]) != base+uint64(p) {
				continue
			}
			_, _, _, err := readFrame(r, size, seg, base+uint64(p))
			if err == nil {
				return base + uint64(p), true, nil
			}
			if !errors.Is(err, errBadRecord) && !errors.Is(err, errFrameEnd) {
				return 0, false, err
			}
		}
	}
	return 0, false, nil
}
