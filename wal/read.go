package wal

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/dgraph-io/badger/v4"
)

// rangeOverhead is what Range counts per instance besides its value.
const rangeOverhead = 20

// beginRead checks the log is usable and pins Badger open; the caller
// must call l.rw.RUnlock. It returns the current FirstIndex.
func (l *Log) beginRead() (uint64, error) {
	l.rw.RLock()
	l.mu.Lock()
	err := l.usableLocked()
	first := l.hs.FirstIndex
	l.mu.Unlock()
	if err != nil {
		l.rw.RUnlock()
		return 0, err
	}
	return first, nil
}

func (l *Log) firstIndex() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hs.FirstIndex
}

func compacted(index, first uint64) error {
	return fmt.Errorf("%w: instance %d below first index %d", ErrCompacted, index, first)
}

// Get returns the accepted record of instance index; ok=false if nothing
// was accepted there. Errors: ErrCompacted (index below FirstIndex),
// ErrCorrupt (the record failed its checks; names the instance),
// ErrClosed, ErrFailed.
func (l *Log) Get(index uint64) (a Accepted, ok bool, err error) {
	first, err := l.beginRead()
	if err != nil {
		return Accepted{}, false, err
	}
	defer l.rw.RUnlock()
	if index < first {
		return Accepted{}, false, compacted(index, first)
	}
	if v, held := l.overlayGet(index); held {
		a, err = decodeAccepted(index, v)
		return a, err == nil, err
	}
	var stored []byte
	err = l.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(acceptedKey(index))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("wal: read instance %d: %w", index, err)
		}
		ok = true
		stored, err = item.ValueCopy(nil)
		return err
	})
	if err == nil && ok {
		a, err = l.decodeStored(index, stored)
	}
	if first := l.firstIndex(); index < first { // truncated while we read
		return Accepted{}, false, compacted(index, first)
	}
	if err != nil {
		return Accepted{}, false, err
	}
	return a, ok, nil
}

// decodeStored decodes what Badger holds for instance index: the record
// itself (written before segments existed) or a reference to it in a
// segment.
func (l *Log) decodeStored(index uint64, v []byte) (Accepted, error) {
	if !isRef(v) {
		return decodeAccepted(index, v)
	}
	seg, off, n, err := decodeRef(index, v)
	if err != nil {
		return Accepted{}, err
	}
	rec, err := l.segs.readAt(seg, off, n)
	if errors.Is(err, errBadRecord) || errors.Is(err, errSegmentGone) {
		return Accepted{}, fmt.Errorf("%w: instance %d: %w", ErrCorrupt, index, err)
	}
	if err != nil {
		return Accepted{}, fmt.Errorf("wal: read instance %d from segment %d: %w", index, seg, err)
	}
	return decodeAccepted(index, rec)
}

// Range returns the stored accepted records with index in [from, to], in
// ascending order, skipping instances with nothing accepted. It stops
// once the values (plus 20 bytes per instance) exceed maxBytes, but
// always returns at least one record if any exists; maxBytes <= 0 means
// no limit. from > to returns nothing. Errors as for Get; on ErrCorrupt
// nothing is returned.
func (l *Log) Range(from, to uint64, maxBytes int) ([]Accepted, error) {
	first, err := l.beginRead()
	if err != nil {
		return nil, err
	}
	defer l.rw.RUnlock()
	if from < first {
		return nil, compacted(from, first)
	}
	if from > to {
		return nil, nil
	}
	// The overlay first: a group applied while Badger is read leaves the
	// overlay only after Badger has it, so it is found in one of the two.
	held := l.overlayRange(from, to)
	var out []Accepted
	cut := false
	err = l.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{
			PrefetchValues: true,
			PrefetchSize:   64,
			Prefix:         []byte{prefixAccepted},
		})
		defer it.Close()
		size := 0
		for it.Seek(acceptedKey(from)); it.Valid(); it.Next() {
			item := it.Item()
			index, ok := indexOfKey(item.Key())
			if !ok {
				return fmt.Errorf("%w: malformed key %x", ErrCorrupt, item.Key())
			}
			if index > to {
				return nil
			}
			var a Accepted
			if err := item.Value(func(v []byte) (err error) {
				a, err = l.decodeStored(index, v)
				return err
			}); err != nil {
				return err
			}
			size += len(a.Value) + rangeOverhead
			if maxBytes > 0 && len(out) > 0 && size > maxBytes {
				cut = true
				return nil
			}
			out = append(out, a)
		}
		return nil
	})
	if first := l.firstIndex(); from < first {
		return nil, compacted(from, first)
	}
	if err != nil {
		return nil, err
	}
	if cut {
		for index := range held {
			if index > out[len(out)-1].Index {
				delete(held, index)
			}
		}
	}
	if len(held) > 0 {
		if out, err = mergeHeld(out, held, maxBytes); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// mergeHeld merges records held by lazy groups (newer than Badger's) into
// out, ascending, and cuts the result at maxBytes again.
func mergeHeld(out []Accepted, held map[uint64][]byte, maxBytes int) ([]Accepted, error) {
	for i, a := range out {
		if v, ok := held[a.Index]; ok {
			d, err := decodeAccepted(a.Index, v)
			if err != nil {
				return nil, err
			}
			out[i] = d
			delete(held, a.Index)
		}
	}
	for index, v := range held {
		d, err := decodeAccepted(index, v)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b Accepted) int { return cmp.Compare(a.Index, b.Index) })
	size := 0
	for i, a := range out {
		size += len(a.Value) + rangeOverhead
		if maxBytes > 0 && i > 0 && size > maxBytes {
			return out[:i], nil
		}
	}
	return out, nil
}
