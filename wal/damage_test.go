package wal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// frameStarts returns the offset of every valid frame of segment id in dir
// (the last entry is where the frames end).
func frameStarts(t *testing.T, dir string, id uint64) []uint64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, segName(id)))
	if err != nil {
		t.Fatal(err)
	}
	offs := []uint64{0}
	if _, err := walkSegment(bytes.NewReader(b), "", uint64(len(b)), id, 0, func(_ []entry, _ []uint64, next uint64) error {
		offs = append(offs, next)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return offs
}

func patchFile(t *testing.T, path string, fn func([]byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, fn(b), 0o600); err != nil {
		t.Fatal(err)
	}
}

// twentyPromises writes 20 groups, group i promising round i and
// accepting instance i, and returns the segment they are in.
func twentyPromises(t *testing.T, dir string) uint64 {
	t.Helper()
	l := openTest(t, dir, quietOptions())
	for i := uint64(1); i <= 20; i++ {
		p := Ballot{Round: i, Node: 1}
		mustSave(t, l, Update{Promised: &p, Accepted: []Accepted{acc(i, i)}})
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	ids, err := segFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ids[len(ids)-1]
}

// loseBadgerAfter makes Badger hold only groups 1..k, as a power cut may
// leave it (Badger is never synced per group): Open must replay the rest
// from the segment.
func loseBadgerAfter(t *testing.T, dir string, seg uint64, k int, starts []uint64) {
	editBadger(t, dir, func(txn *badger.Txn) error {
		for i := uint64(k + 1); i <= 20; i++ {
			if err := txn.Delete(acceptedKey(i)); err != nil {
				return err
			}
		}
		if err := txn.Set(keyPromised, encodeBallot(keyPromised, Ballot{Round: uint64(k), Node: 1})); err != nil {
			return err
		}
		return txn.Set(keySegPos, encodeSegPos(segPos{seg, starts[k]}))
	})
}

// TestFlippedByteMidSegmentRefusesOpen: one byte flipped in the middle of
// the newest segment, Badger behind it. Taking the bad frame for a torn
// tail would drop everything after it (promise round 20 would become 5,
// instances 6-20 would vanish); Open refuses instead, naming the file,
// the offset, what it found and where valid frames resume, and changes
// nothing.
func TestFlippedByteMidSegmentRefusesOpen(t *testing.T) {
	dir := t.TempDir()
	seg := twentyPromises(t, dir)
	starts := frameStarts(t, dir, seg)
	loseBadgerAfter(t, dir, seg, 5, starts)
	path := filepath.Join(dir, segName(seg))
	// Frame 6 (starts[5]): flip a byte of instance 6's value.
	patchFile(t, path, func(b []byte) []byte {
		i := bytes.Index(b[starts[5]:], []byte("value-6")) + int(starts[5])
		b[i+3] ^= 0x01
		return b
	})
	before, _ := os.ReadFile(path)
	for range 2 { // a failed Open leaves the bytes as they were: the second fails alike
		_, err := Open(dir, quietOptions())
		wantErr(t, err, ErrCorrupt)
		var dmg *DamageError
		if !errors.As(err, &dmg) {
			t.Fatalf("err = %v, want a *DamageError", err)
		}
		if dmg.Path != path || dmg.Offset != starts[5] || dmg.Next != starts[6] {
			t.Fatalf("damage = %+v, want %s at %d, next frame at %d", dmg, path, starts[5], starts[6])
		}
		for _, s := range []string{path, fmt.Sprintf("byte offset %d", starts[5]), "checksum", fmt.Sprintf("valid frame follows at offset %d", starts[6])} {
			if !strings.Contains(err.Error(), s) {
				t.Fatalf("error %q does not say %q", err, s)
			}
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
			t.Fatal("a refused Open changed the segment")
		}
	}

	// The repair tool sees it the same way, and the cut needs the
	// operator: afterwards the log opens at the last good frame.
	r, err := Inspect(dir, quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Problems) != 1 || !r.Problems[0].Damage() || r.Problems[0].Offset != starts[5] || r.Problems[0].FramesAfter != 14 || r.Problems[0].Applied {
		t.Fatalf("Inspect = %+v", r.Problems)
	}
	if _, err := Repair(dir, seg, starts[5]+1, quietOptions()); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Repair off a frame boundary: %v, want ErrInvalid", err)
	}
	if _, err := Repair(dir, seg, starts[4], quietOptions()); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Repair below what Badger holds: %v, want ErrInvalid", err)
	}
	res, err := Repair(dir, seg, starts[5], quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if res.Bytes != uint64(len(before))-starts[5] {
		t.Fatalf("Repair cut %d bytes, want %d", res.Bytes, uint64(len(before))-starts[5])
	}
	l := openTest(t, dir, quietOptions())
	if hs := l.HardState(); hs.Promised.Round != 5 || l.LastIndex() != 5 {
		t.Fatalf("after repair: promised %v, last %d; want the prefix (5, 5)", hs.Promised, l.LastIndex())
	}
	mustSave(t, l, Update{Accepted: []Accepted{acc(6, 21)}})
	if a, ok, err := l.Get(6); err != nil || !ok || !equalAccepted(a, acc(6, 21)) {
		t.Fatalf("Get(6) after repair = %+v %v %v", a, ok, err)
	}
	if r, err := Inspect(dir, quietOptions()); !errors.Is(err, ErrLocked) {
		t.Fatalf("Inspect of an open log: %+v %v, want ErrLocked", r, err)
	}
}

// TestFlippedByteBadgerHolds: the same flip when Badger already holds
// every group. Open succeeds (HardState comes from Badger: promise round
// 20 stays), and the damaged instance reads as ErrCorrupt, never as a gap.
func TestFlippedByteBadgerHolds(t *testing.T) {
	dir := t.TempDir()
	seg := twentyPromises(t, dir)
	starts := frameStarts(t, dir, seg)
	patchFile(t, filepath.Join(dir, segName(seg)), func(b []byte) []byte {
		i := bytes.Index(b[starts[5]:], []byte("value-6")) + int(starts[5])
		b[i+3] ^= 0x01
		return b
	})
	l := openTest(t, dir, quietOptions())
	if hs := l.HardState(); hs.Promised.Round != 20 || l.LastIndex() != 20 {
		t.Fatalf("promised %v, last %d; want 20, 20", hs.Promised, l.LastIndex())
	}
	_, _, err := l.Get(6)
	wantCorrupt(t, err, "instance 6")
	if rs, err := l.Range(1, 20, 0); !errors.Is(err, ErrCorrupt) || rs != nil {
		t.Fatalf("Range over the damage = %d records, %v; want ErrCorrupt and nothing", len(rs), err)
	}
	if _, err := l.Range(7, 20, 0); err != nil {
		t.Fatal(err)
	}
	l.Close()
	r, err := Inspect(dir, quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Problems) != 1 || !r.Problems[0].Applied {
		t.Fatalf("Inspect = %+v, want one problem Badger already holds", r.Problems)
	}
	if _, err := Repair(dir, seg, starts[5], quietOptions()); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Repair under Badger's references: %v, want ErrInvalid", err)
	}
}

// TestTornLastFrameDropped: what a crash leaves after the last answered
// frame (a partial frame, zeros, a partial frame then zeros) is cut off;
// damage with a valid frame behind it anywhere is refused.
func TestTornLastFrameDropped(t *testing.T) {
	frame21 := func(seg, off uint64) []byte {
		f, _ := encodeFrame(seg, off, []entry{{acceptedKey(21), encodeAccepted(acc(21, 1))}})
		return f
	}
	for name, c := range map[string]struct {
		tail   func(seg, off uint64) []byte
		damage bool
	}{
		"partial frame":      {tail: func(s, o uint64) []byte { return frame21(s, o)[:30] }},
		"zeros":              {tail: func(uint64, uint64) []byte { return make([]byte, 8192) }},
		"partial then zeros": {tail: func(s, o uint64) []byte { return append(frame21(s, o)[:30], make([]byte, 5000)...) }},
		"bad length":         {tail: func(s, o uint64) []byte { f := frame21(s, o); f[0] = 0xff; return f }},
		"zeros then a frame": {damage: true, tail: func(s, o uint64) []byte { return append(make([]byte, 4096), frame21(s, o+4096)...) }},
		"bad length, a frame": {damage: true, tail: func(s, o uint64) []byte {
			f := frame21(s, o)
			f[0] = 0xff
			return append(f, frame21(s, o+uint64(len(f)))...)
		}},
		"bad checksum, frame": {damage: true, tail: func(s, o uint64) []byte {
			f := frame21(s, o)
			f[5] ^= 1
			return append(f, frame21(s, o+uint64(len(f)))...)
		}},
		"garbage then a frame": {damage: true, tail: func(s, o uint64) []byte { return append(bytes.Repeat([]byte{0xa5}, 77), frame21(s, o+77)...) }},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			seg := twentyPromises(t, dir)
			starts := frameStarts(t, dir, seg)
			end := starts[len(starts)-1]
			path := filepath.Join(dir, segName(seg))
			patchFile(t, path, func(b []byte) []byte { return append(b, c.tail(seg, end)...) })
			l, err := Open(dir, quietOptions())
			if c.damage {
				var dmg *DamageError
				if !errors.As(err, &dmg) || dmg.Offset != end {
					t.Fatalf("Open = %v, want damage at %d", err, end)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if hs := l.HardState(); hs.Promised.Round != 20 || l.LastIndex() != 20 {
				t.Fatalf("promised %v, last %d; want 20, 20", hs.Promised, l.LastIndex())
			}
			if fi, err := os.Stat(path); err != nil || uint64(fi.Size()) != end {
				t.Fatalf("tail not cut to %d bytes: %v %v", end, fi.Size(), err)
			}
		})
	}
}

// TestDamageInOlderSegment: damage in a segment that is not the newest
// (synced before the next began) fails Open with its file and offset, a
// repair there deletes the later segments too, and the log opens after.
func TestDamageInOlderSegment(t *testing.T) {
	dir := t.TempDir()
	opts := quietOptions()
	opts.SegmentBytes = 4 << 10
	l := openTest(t, dir, opts)
	for i := uint64(1); i <= 300; i++ {
		mustSave(t, l, Update{Accepted: []Accepted{acc(i, 1)}})
	}
	l.Close()
	ids, _ := segFiles(dir)
	if len(ids) < 3 {
		t.Fatalf("%d segments; want several", len(ids))
	}
	starts := frameStarts(t, dir, ids[0])
	editBadger(t, dir, func(txn *badger.Txn) error { return txn.Set(keySegPos, encodeSegPos(segPos{ids[0], starts[2]})) })
	patchFile(t, filepath.Join(dir, segName(ids[0])), func(b []byte) []byte { b[starts[3]+20] ^= 0x80; return b })
	_, err := Open(dir, opts)
	var dmg *DamageError
	if !errors.As(err, &dmg) || dmg.Segment != ids[0] || dmg.Offset != starts[3] {
		t.Fatalf("Open = %v, want damage in segment %d at %d", err, ids[0], starts[3])
	}
	res, err := Repair(dir, ids[0], starts[3], opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Removed) != len(ids)-1 {
		t.Fatalf("removed %v, want every segment after %d", res.Removed, ids[0])
	}
	l = openTest(t, dir, opts)
	defer l.Close()
	for i := uint64(1); i <= 3; i++ {
		if _, ok, err := l.Get(i); err != nil || !ok {
			t.Fatalf("Get(%d) after repair: %v %v", i, ok, err)
		}
	}
}
