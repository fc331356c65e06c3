package wal

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"testing"
)

// segmentSeeds are the committed seeds of FuzzWalkSegment: segment 1
// holding three frames, whole and damaged in the ways a disk or a crash
// damages them.
func segmentSeeds() map[string][]byte {
	var seg []byte
	for i := uint64(1); i <= 3; i++ {
		p := encodeBallot(keyPromised, Ballot{Round: i, Node: 1})
		f, _ := encodeFrame(1, uint64(len(seg)), []entry{{acceptedKey(i), encodeAccepted(acc(i, i))}, {keyPromised, p}})
		seg = append(seg, f...)
	}
	third := len(seg) / 3 // inside the second frame
	mod := func(fn func(b []byte) []byte) []byte { return fn(append([]byte{}, seg...)) }
	return map[string][]byte{
		"whole":         seg,
		"torn-last":     seg[:len(seg)-5],
		"zero-tail":     append(append([]byte{}, seg...), make([]byte, 64)...),
		"flipped-mid":   mod(func(b []byte) []byte { b[third+12] ^= 0x10; return b }),
		"zeroed-mid":    mod(func(b []byte) []byte { clear(b[third : third+20]); return b }),
		"bad-length":    mod(func(b []byte) []byte { b[0] = 0x7f; return b }),
		"empty":         nil,
		"garbage-first": append(bytes.Repeat([]byte{0x5a}, 9), seg...),
	}
}

// TestSegmentCorpus rewrites FuzzWalkSegment's seeds with -update-corpus
// and otherwise checks they are present.
func TestSegmentCorpus(t *testing.T) {
	files := map[string]string{}
	for name, b := range segmentSeeds() {
		files[name] = fmt.Sprintf("go test fuzz v1\n[]byte(%s)\n", strconv.Quote(string(b)))
	}
	checkCorpus(t, "FuzzWalkSegment", "TestSegmentCorpus", files)
}

// FuzzWalkSegment: over any bytes of segment 1, walkSegment never panics
// and its verdict is right: the frames it applies are a prefix of valid
// frames from offset 0, each re-encoding to its bytes; a torn tail has no
// valid frame anywhere after it; damage names an offset where the valid
// prefix stops and a later offset where a valid frame starts.
func FuzzWalkSegment(f *testing.F) {
	for _, b := range segmentSeeds() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, size := bytes.NewReader(b), uint64(len(b))
		validAt := func(off uint64) bool {
			_, _, _, err := readFrame(r, size, 1, off)
			return err == nil
		}
		end := uint64(0)
		tail, err := walkSegment(r, "seg", size, 1, 0, func(es []entry, _ []uint64, next uint64) error {
			again, _ := encodeFrame(1, end, es)
			if !bytes.Equal(again, b[end:next]) {
				t.Fatalf("frame at %d does not re-encode to its bytes", end)
			}
			end = next
			return nil
		})
		var dmg *DamageError
		switch {
		case errors.As(err, &dmg):
			if !errors.Is(err, ErrCorrupt) || dmg.Offset != end || dmg.Next <= end || !validAt(dmg.Next) {
				t.Fatalf("damage %+v after a valid prefix ending at %d", dmg, end)
			}
		case err != nil:
			t.Fatalf("walk: %v", err)
		case tail == nil:
			if end != size {
				t.Fatalf("no tail, but the frames end at %d of %d", end, size)
			}
		default:
			if tail.off != end || end >= size {
				t.Fatalf("tail at %d, frames end at %d of %d", tail.off, end, size)
			}
			for off := end + 1; off < size; off++ {
				if validAt(off) {
					t.Fatalf("torn tail at %d, but a valid frame starts at %d", end, off)
				}
			}
		}
	})
}
