package wal

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/dgraph-io/badger/v4"
)

// Offline inspection and repair of a log's segments (binlogd wal-repair).
// Both take the directory's lock, so they refuse while a Log (a running
// node) has it open.

// Problem is a place where a segment's valid frames stop before the end
// of its file.
type Problem struct {
	Segment uint64
	Path    string
	Offset  uint64 // where the valid frames stop
	Reason  string // what is there: a bad checksum, a bad length, zeros
	Bytes   uint64 // from Offset to the end of the file
	// Next is the offset of the first valid frame after Offset, and
	// FramesAfter how many valid frames follow from there; Next == 0: none
	// follow (a torn tail, which Open cuts off by itself in the newest
	// segment).
	Next        uint64
	FramesAfter int
	// Applied: Badger already holds what lies beyond Offset (its replay
	// starts after it, or it refers to records there; for a missing
	// segment, into it), so that was answered data, now lost: cutting
	// cannot repair it (Open or reads of those instances fail with
	// ErrCorrupt); the node's log must be reseeded.
	Applied bool
	// Older: bad bytes (not zeros) end a segment that is not the newest;
	// it was synced before the next one began, so they are corruption,
	// and Open refuses them (replay.go).
	Older bool
}

// Damage reports whether p is damage rather than a torn tail: valid
// frames follow the bad bytes, or Badger already holds (or refers to)
// what was there. A torn tail is only ever unanswered bytes after
// everything Badger holds.
func (p Problem) Damage() bool { return p.Next != 0 || p.Applied || p.Older }

// Report is what Inspect found.
type Report struct {
	Dir      string
	Segments []uint64 // ids, ascending
	Frames   int      // valid frames before the first problem of each segment, in all
	// Replay is where Open's replay starts (Badger holds every frame
	// before it); ReplaySegment == 0: Badger holds no position yet.
	ReplaySegment, ReplayOffset uint64
	Problems                    []Problem
	// MembershipSaved: the log records that the node saved a membership
	// history next to it (Log.MembershipSaved: in Badger, or in a valid
	// frame Open would replay), so the node refuses to start without
	// that history.
	MembershipSaved bool
}

// Inspect reads every segment of the log in dir from its start and
// reports where its frames stop before the end of the file, and what
// Badger refers to that is gone: a segment file missing, or cut or
// damaged below where Badger's replay starts or where its references
// point (Problem.Applied). It writes nothing: Badger is opened read-only
// and the segments for reading. Errors: ErrLocked (the log is open),
// ErrCorrupt (Badger's own files are damaged), I/O errors.
func Inspect(dir string, opts Options) (*Report, error) {
	r := &Report{Dir: dir}
	err := offline(dir, opts, true, func(db *badger.DB, segs *segments, ids []uint64) error {
		pos, have, err := readSegPos(db)
		if err != nil {
			return err
		}
		if have {
			r.ReplaySegment, r.ReplayOffset = pos.seg, pos.off
		}
		if r.MembershipSaved, err = readMembership(db); err != nil {
			return err
		}
		refs, err := readRefs(db)
		if err != nil {
			return err
		}
		r.Segments = ids
		for _, id := range ids {
			f, path := segs.files[id], segs.path(id)
			fi, err := f.Stat()
			if err != nil {
				return fmt.Errorf("wal: stat %s: %w", path, err)
			}
			size := uint64(fi.Size())
			// below: Badger holds (or refers to) what lay at or after off.
			below := func(off uint64, zeros bool) bool {
				if ref, ok := refs[id]; ok && ref.end > off {
					return true
				}
				if !have || !(segPos{id, off}).less(pos) {
					return false
				}
				// Zeros up to the end of an older segment that nothing
				// refers into hold nothing: Open leaves them (replay.go).
				return id == pos.seg || !zeros
			}
			count := func(es []entry, _ []uint64, _ uint64) error {
				r.Frames++
				// A marker Badger lacks is in a frame Open replays.
				r.MembershipSaved = r.MembershipSaved || frameMarks(es)
				return nil
			}
			tail, err := walkSegment(f, path, size, id, 0, count)
			var dmg *DamageError
			switch {
			case errors.As(err, &dmg):
				p := Problem{Segment: id, Path: path, Offset: dmg.Offset, Reason: dmg.Reason.Error(), Bytes: size - dmg.Offset, Next: dmg.Next}
				after := 0
				_, _ = walkSegment(f, path, size, id, dmg.Next, func([]entry, []uint64, uint64) error { after++; return nil })
				p.FramesAfter = after
				p.Applied = below(dmg.Offset, false)
				r.Problems = append(r.Problems, p)
			case err != nil:
				return err
			case tail != nil:
				r.Problems = append(r.Problems, Problem{Segment: id, Path: path, Offset: tail.off, Reason: tail.reason.Error(),
					Bytes: size - tail.off, Applied: below(tail.off, tail.zeros),
					Older: id != ids[len(ids)-1] && !tail.zeros && (!have || id >= pos.seg)})
			case have && id == pos.seg && size < pos.off:
				// Cut at a frame boundary: no tail, but short of the replay.
				r.Problems = append(r.Problems, Problem{Segment: id, Path: path, Offset: size,
					Reason: fmt.Sprintf("the file ends at byte %d, but Badger holds its frames up to offset %d", size, pos.off), Applied: true})
			case refs[id].end > size:
				r.Problems = append(r.Problems, Problem{Segment: id, Path: path, Offset: size,
					Reason: fmt.Sprintf("the file ends at byte %d, but Badger refers to records up to offset %d (instance %d)", size, refs[id].end, refs[id].index), Applied: true})
			}
		}
		r.Problems = append(r.Problems, missingSegments(segs, ids, refs, pos, have)...)
		slices.SortStableFunc(r.Problems, func(a, b Problem) int { return cmp.Compare(a.Segment, b.Segment) })
		return nil
	})
	return r, err
}

// missingSegments reports the segments Badger needs that are not there:
// where its replay starts, and every one it refers into.
func missingSegments(segs *segments, ids []uint64, refs map[uint64]segRefs, pos segPos, have bool) []Problem {
	var out []Problem
	if have && !slices.Contains(ids, pos.seg) {
		out = append(out, Problem{Segment: pos.seg, Path: segs.path(pos.seg), Applied: true,
			Reason: fmt.Sprintf("the file is missing, and Badger's replay starts in it (offset %d)", pos.off)})
	}
	for id, ref := range refs {
		if slices.Contains(ids, id) || (have && id == pos.seg) {
			continue
		}
		out = append(out, Problem{Segment: id, Path: segs.path(id), Applied: true,
			Reason: fmt.Sprintf("the file is missing, and Badger refers to %d accepted records in it (instances %d to %d)", ref.count, ref.first, ref.index)})
	}
	return out
}

// segRefs sums up Badger's references into one segment.
type segRefs struct {
	count        int
	first, index uint64 // the lowest instance, and the one that reaches end
	end          uint64 // the highest byte referred to, plus one
}

// readRefs reads every accepted record Badger holds at or above
// FirstIndex (below it, records wait to be reclaimed and nothing reads
// them) and sums up the references into each segment.
func readRefs(db *badger.DB) (map[uint64]segRefs, error) {
	out := map[uint64]segRefs{}
	err := db.View(func(txn *badger.Txn) error {
		first := uint64(1)
		if rec, ok, err := getValue(txn, keyFirst); err != nil {
			return err
		} else if ok {
			if first, err = decodeUint(keyFirst, rec, kindFirst); err != nil {
				return err
			}
		}
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: true, Prefix: []byte{prefixAccepted}})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			idx, ok := indexOfKey(it.Item().Key())
			if !ok {
				return fmt.Errorf("%w: malformed key %x", ErrCorrupt, it.Item().Key())
			}
			if idx < first {
				continue
			}
			rec, err := it.Item().ValueCopy(nil)
			if err != nil {
				return fmt.Errorf("wal: read instance %d: %w", idx, err)
			}
			if !isRef(rec) {
				continue
			}
			seg, off, n, err := decodeRef(idx, rec)
			if err != nil {
				return err
			}
			s := out[seg]
			if s.count == 0 || idx < s.first {
				s.first = idx
			}
			s.count++
			if end := off + uint64(n); end > s.end {
				s.end, s.index = end, idx
			}
			out[seg] = s
		}
		return nil
	})
	return out, err
}

// RepairResult says what Repair dropped.
type RepairResult struct {
	Bytes   uint64   // cut from the segment
	Removed []uint64 // later segments deleted
}

// Repair cuts segment seg at offset off, which must be a frame boundary
// at or before the point where its valid frames stop, and deletes every
// later segment: the log then ends at off, and the next Open starts from
// there. Whatever the dropped frames held (promises, votes, chosen
// indexes) is forgotten: see the caller's warning. It refuses
// (ErrInvalid) when Badger already holds frames beyond off.
func Repair(dir string, seg, off uint64, opts Options) (RepairResult, error) {
	var res RepairResult
	err := offline(dir, opts, false, func(db *badger.DB, segs *segments, ids []uint64) error {
		f := segs.files[seg]
		if f == nil {
			return fmt.Errorf("%w: no segment %d in %s (segments: %v)", ErrInvalid, seg, dir, ids)
		}
		path := segs.path(seg)
		fi, err := f.Stat()
		if err != nil {
			return fmt.Errorf("wal: stat %s: %w", path, err)
		}
		size := uint64(fi.Size())
		bounds := map[uint64]bool{0: true}
		_, err = walkSegment(f, path, size, seg, 0, func(_ []entry, _ []uint64, next uint64) error { bounds[next] = true; return nil })
		var dmg *DamageError
		if err != nil && !errors.As(err, &dmg) {
			return err
		}
		if !bounds[off] {
			return fmt.Errorf("%w: offset %d of %s is not where a frame of the valid prefix ends", ErrInvalid, off, path)
		}
		pos, have, err := readSegPos(db)
		if err != nil {
			return err
		}
		if have && (segPos{seg, off}).less(pos) {
			return fmt.Errorf("%w: Badger already holds the frames up to segment %d offset %d, beyond the cut: it would refer to dropped bytes; reseed this node's log instead", ErrInvalid, pos.seg, pos.off)
		}
		if err := f.Truncate(int64(off)); err != nil {
			return fmt.Errorf("wal: cut %s: %w", path, err)
		}
		if err := fdatasync(f); err != nil {
			return fmt.Errorf("wal: sync %s: %w", path, err)
		}
		res.Bytes = size - off
		for _, id := range ids {
			if id > seg {
				if err := segs.remove(id); err != nil {
					return err
				}
				res.Removed = append(res.Removed, id)
			}
		}
		return syncDir(dir)
	})
	return res, err
}

// offline runs fn with the directory locked, Badger open and every
// segment open. readOnly (inspection): nothing in dir is written, not
// even the cleanup Open does first (empty Badger files are left).
func offline(dir string, opts Options, readOnly bool, fn func(db *badger.DB, segs *segments, ids []uint64) error) error {
	opts, err := opts.withDefaults()
	if err != nil {
		return err
	}
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	lk, err := lockDir(dir)
	if err != nil {
		return err
	}
	defer unlockDir(lk)
	if !readOnly {
		if err := dropEmptyBadgerFiles(dir, opts.Logger); err != nil { // powerloss.go
			return err
		}
	}
	db, release, err := openBadger(dir, opts, readOnly) // badgeropen.go
	if err != nil {
		return err
	}
	defer release() // after db.Close
	defer db.Close()
	ids, err := segFiles(dir)
	if err != nil {
		return err
	}
	segs := newSegments(dir)
	defer segs.closeAll()
	for _, id := range ids {
		if _, err := segs.openMode(id, readOnly); err != nil {
			return err
		}
	}
	return fn(db, segs, ids)
}

func readSegPos(db *badger.DB) (pos segPos, have bool, err error) {
	err = db.View(func(txn *badger.Txn) error {
		rec, ok, err := getValue(txn, keySegPos)
		if err != nil || !ok {
			return err
		}
		have = true
		pos, err = decodeSegPos(rec)
		return err
	})
	return pos, have, err
}
