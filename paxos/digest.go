package paxos

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
)

// Log digests: Paxos tolerates nodes that stop, not nodes that lie or
// have bugs. A holder of a node's key can make another node store a
// forged value as chosen (a forged Learn answering its Fetch), and a
// bug or a disk could do the same; that node's log then forks from the
// others' without any protocol message saying so. So every node hashes
// its chosen log per fixed range of indexes, [k*R+1, (k+1)*R], as it
// applies it, and the nodes exchange their newest finished range digests
// on the messages they send each other anyway (digestbook.go). Two
// digests of the same range that differ are a divergence: logged once
// per range and peer, counted, and reported in Status.
//
// What is hashed, per entry in index order: the index (8 bytes, big
// endian), the value's length (8 bytes, big endian) and the value, the
// exact bytes that were chosen (a Noop is the empty value; a membership
// change is a value like any other). Every node applies the same chosen
// bytes whether they came in an Accept, a Learn answering its Fetch, or
// from its own storage at a restart, so every node computes the same
// digest for the same log.
//
//	   index:  ... 255 256 | 257 258 ... 512 | 513 ...
//	   range:   k=0        |  k=1  (R = 256)  |  k=2
//	                        └ finished when 512 is applied: RangeDigest{257, 512, sha256(...)}

// DefaultDigestRange is Config.DigestRange's default: 256 indexes. Why
// 256: a divergence shows only once a range is finished on both sides,
// and an idle binlogd cluster chooses about one value per lease renewal
// (a second or so), so a range of 256 is finished within minutes idle
// and within a fraction of a second under load; a range costs one
// 48-byte record and one comparison per peer, so smaller would be cheap
// too, but 256 keeps the 64 remembered ranges (digestKeepOwn) covering
// 16384 indexes, more than a lagging node usually is behind.
const DefaultDigestRange = 256

// maxDigestRange bounds Config.DigestRange.
const maxDigestRange = 1 << 20

// RangeDigest is a node's SHA-256 over its chosen log in [First, Last]
// (see above for the bytes hashed).
type RangeDigest struct {
	First, Last uint64
	Sum         [sha256.Size]byte
}

func (d RangeDigest) String() string {
	return fmt.Sprintf("[%d,%d]:%x", d.First, d.Last, d.Sum[:8])
}

// digester computes the running digest of the current range as entries
// are applied in index order (applier goroutine).
//
// Invariant: valid implies the hash covers exactly [first, next-1], every
// index of it applied here or read back from this node's storage.
type digester struct {
	r     uint64
	h     hash.Hash
	first uint64 // first index of the current range
	next  uint64 // next index expected
	valid bool   // false: part of the current range is unknown here (snapshot, compacted log)
	hdr   [16]byte
}

func newDigester(r uint64) *digester {
	if r == 0 {
		r = DefaultDigestRange
	}
	return &digester{r: r, h: sha256.New()}
}

// rangeOf returns the first and last index of the range holding i >= 1.
func (d *digester) rangeOf(i uint64) (first, last uint64) {
	first = (i-1)/d.r*d.r + 1
	return first, first + d.r - 1
}

// reset positions the digester after applied: the range holding
// applied+1 starts fresh if applied ends a range, and is unknown
// otherwise until resume fills it in (or the next range begins).
func (d *digester) reset(applied uint64) {
	d.first, _ = d.rangeOf(applied + 1)
	d.next = applied + 1
	d.h.Reset()
	d.valid = d.first == d.next
}

// add hashes the entry at index i, which must be d.next; it returns the
// range's digest when i finishes it.
func (d *digester) add(i uint64, value []byte) (RangeDigest, bool) {
	if i != d.next {
		panic(fmt.Sprintf("paxos: digest of %d after %d", i, d.next-1))
	}
	binary.BigEndian.PutUint64(d.hdr[:8], i)
	binary.BigEndian.PutUint64(d.hdr[8:], uint64(len(value)))
	d.h.Write(d.hdr[:])
	d.h.Write(value)
	d.next = i + 1
	if i != d.first+d.r-1 {
		return RangeDigest{}, false
	}
	out := RangeDigest{First: d.first, Last: i}
	ok := d.valid
	if ok {
		d.h.Sum(out.Sum[:0])
	}
	d.h.Reset()
	d.first, d.valid = i+1, true
	return out, ok
}

// resume re-hashes the current range's applied part, [first, next-1],
// from storage after a restart. If storage no longer holds all of it
// (compacted, or a snapshot was installed inside it), the range stays
// unknown here: not a mismatch, just nothing to compare.
func (d *digester) resume(st Storage) error {
	if d.valid || d.next == d.first {
		return nil
	}
	ok, err := hashStored(st, d.h, d.first, d.next-1, &d.hdr)
	if err != nil {
		return err
	}
	d.valid = ok
	return nil
}

// digestStored returns the digest of [first, last] from storage; ok is
// false if storage lacks any index of it.
func digestStored(st Storage, first, last uint64) (RangeDigest, bool, error) {
	h := sha256.New()
	var hdr [16]byte
	ok, err := hashStored(st, h, first, last, &hdr)
	if err != nil || !ok {
		return RangeDigest{}, false, err
	}
	out := RangeDigest{First: first, Last: last}
	h.Sum(out.Sum[:0])
	return out, true, nil
}

// hashStored feeds [from, to] from storage into h, as digester.add does;
// false if an index is missing (h is then garbage).
func hashStored(st Storage, h hash.Hash, from, to uint64, hdr *[16]byte) (bool, error) {
	if st.HardState().FirstIndex > from {
		return false, nil
	}
	next := from
	for next <= to {
		as, err := st.Range(next, to, 16<<20)
		if err != nil {
			return false, fmt.Errorf("%w: read %d-%d for the log digest: %w", ErrStorage, next, to, err)
		}
		if len(as) == 0 {
			return false, nil
		}
		for _, a := range as {
			if a.Index != next {
				return false, nil
			}
			binary.BigEndian.PutUint64(hdr[:8], a.Index)
			binary.BigEndian.PutUint64(hdr[8:], uint64(len(a.Value)))
			h.Write(hdr[:])
			h.Write(a.Value)
			next++
		}
	}
	return true, nil
}
