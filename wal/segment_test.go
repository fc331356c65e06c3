package wal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// editBadger opens dir's Badger directly (the Log closed), as a power cut
// would leave it: fn changes what Badger kept.
func editBadger(t *testing.T, dir string, fn func(txn *badger.Txn) error) {
	t.Helper()
	o, err := quietOptions().withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	db, err := badger.Open(o.badger(dir))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func segPaths(t *testing.T, dir string) []string {
	t.Helper()
	ids, err := segFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, id := range ids {
		out = append(out, filepath.Join(dir, segName(id)))
	}
	return out
}

// TestReplayRestoresWhatBadgerLost: Badger is synced only at truncations
// and segment collection, so a power cut may leave it behind the
// segments. Open replays the frames after m/segpos: every instance and
// the HardState come back, and the truncation Badger did keep is not
// undone (replayed records below FirstIndex stay dropped, metadata never
// moves back).
func TestReplayRestoresWhatBadgerLost(t *testing.T) {
	dir := t.TempDir()
	opts := quietOptions()
	opts.SegmentBytes = 8 << 10 // several segments
	l := openTest(t, dir, opts)
	for i := uint64(1); i <= 200; i++ {
		p := Ballot{Round: i, Node: 1}
		mustSave(t, l, Update{Promised: &p, Accepted: []Accepted{acc(i, i)}, Chosen: i - 1})
	}
	if err := l.SaveApplied(100, []byte("state@100")); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateBelow(50); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(segPaths(t, dir)); n < 3 {
		t.Fatalf("%d segments; the test wants several", n)
	}
	// Badger "lost" everything but its truncation: replay from the oldest
	// segment, instances 120.. gone, metadata back to an old state.
	first, err := segFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	editBadger(t, dir, func(txn *badger.Txn) error {
		for i := uint64(120); i <= 200; i++ {
			if err := txn.Delete(acceptedKey(i)); err != nil {
				return err
			}
		}
		for _, e := range []entry{
			{keySegPos, encodeSegPos(segPos{first[0], 0})},
			{keyPromised, encodeBallot(keyPromised, Ballot{Round: 3, Node: 1})},
			{keyChosen, encodeUint(keyChosen, kindChosen, 100)},
		} {
			if err := txn.Set(e.key, e.val); err != nil {
				return err
			}
		}
		return nil
	})
	l = openTest(t, dir, opts)
	hs := l.HardState()
	if hs.Promised != (Ballot{Round: 200, Node: 1}) || hs.Chosen != 199 || hs.Applied != 100 || hs.FirstIndex != 50 {
		t.Fatalf("HardState after replay = %+v", hs)
	}
	if got := l.LastIndex(); got != 200 {
		t.Fatalf("LastIndex = %d, want 200", got)
	}
	for i := uint64(50); i <= 200; i++ {
		if a, ok, err := l.Get(i); err != nil || !ok || !equalAccepted(a, acc(i, i)) {
			t.Fatalf("Get(%d) after replay = %+v, %v, %v", i, a, ok, err)
		}
	}
	if _, _, err := l.Get(49); !errors.Is(err, ErrCompacted) {
		t.Fatalf("Get(49) after replay: %v, want ErrCompacted", err)
	}
}

// TestTornTailIsCutOff: a group written but never synced may be torn by a
// power cut; Open cuts the newest segment at the first frame that is not
// whole, keeps everything before it, and the bytes cut never come back.
func TestTornTailIsCutOff(t *testing.T) {
	for name, tear := range map[string]func([]byte) []byte{
		"half a frame": func(f []byte) []byte { return f[:len(f)/2] },
		"flipped bit":  func(f []byte) []byte { f[len(f)-3] ^= 1; return f },
		"garbage":      func([]byte) []byte { return bytes.Repeat([]byte{0xa5}, 100) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			l := openTest(t, dir, quietOptions())
			for i := uint64(1); i <= 20; i++ {
				mustSave(t, l, Update{Accepted: []Accepted{acc(i, 1)}})
			}
			segID, off := l.segID, l.segOff
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			frame, _ := encodeFrame(segID, off, []entry{{acceptedKey(21), encodeAccepted(acc(21, 1))}})
			f, err := os.OpenFile(filepath.Join(dir, segName(segID)), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write(tear(frame)); err != nil {
				t.Fatal(err)
			}
			f.Close()
			l = openTest(t, dir, quietOptions())
			if got := l.LastIndex(); got != 20 {
				t.Fatalf("LastIndex = %d after a torn tail, want 20", got)
			}
			if fi, err := os.Stat(filepath.Join(dir, segName(segID))); err != nil || uint64(fi.Size()) != off {
				t.Fatalf("torn segment not cut to %d bytes: %v %v", off, fi.Size(), err)
			}
			mustSave(t, l, Update{Accepted: []Accepted{acc(21, 2)}})
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = openTest(t, dir, quietOptions())
			for i := uint64(1); i <= 21; i++ {
				want := acc(i, 1)
				if i == 21 {
					want = acc(21, 2)
				}
				if a, ok, err := l.Get(i); err != nil || !ok || !equalAccepted(a, want) {
					t.Fatalf("Get(%d) = %+v, %v, %v", i, a, ok, err)
				}
			}
		})
	}
}

// TestCorruptSegment: a damaged frame in a segment that is not the newest
// fails Open with ErrCorrupt naming the segment (it was synced before the
// next one began, so it is not a torn tail), and a damaged record that
// Badger refers to fails the read with ErrCorrupt naming the instance.
func TestCorruptSegment(t *testing.T) {
	dir := t.TempDir()
	opts := quietOptions()
	opts.SegmentBytes = 4 << 10
	l := openTest(t, dir, opts)
	for i := uint64(1); i <= 100; i++ {
		mustSave(t, l, Update{Accepted: []Accepted{acc(i, 1)}})
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	paths := segPaths(t, dir)
	b, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte("value-3"))
	b[i] ^= 0x40
	if err := os.WriteFile(paths[0], b, 0o600); err != nil {
		t.Fatal(err)
	}
	l = openTest(t, dir, opts)
	_, _, err = l.Get(3)
	wantErr(t, err, ErrCorrupt)
	if !strings.Contains(err.Error(), "instance 3") {
		t.Fatalf("error does not name the instance: %v", err)
	}
	if _, err := l.Range(1, 10, 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Range over a corrupt record: %v, want ErrCorrupt", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	ids, _ := segFiles(dir)
	editBadger(t, dir, func(txn *badger.Txn) error {
		return txn.Set(keySegPos, encodeSegPos(segPos{ids[0], 0}))
	})
	_, err = Open(dir, opts)
	wantErr(t, err, ErrCorrupt)
	if !strings.Contains(err.Error(), "segment") {
		t.Fatalf("error does not name the segment: %v", err)
	}
}

// TestSegmentsDeletedBehindTruncation: once truncation passes every
// instance of a segment, the truncation deletes the segment; the rest of
// the log reads back, also after a reopen.
func TestSegmentsDeletedBehindTruncation(t *testing.T) {
	dir := t.TempDir()
	opts := quietOptions()
	opts.SegmentBytes = 4 << 10
	l := openTest(t, dir, opts)
	save := func(from, to uint64) {
		for i := from; i <= to; i++ {
			mustSave(t, l, Update{Accepted: []Accepted{acc(i, 1)}, Chosen: i})
		}
	}
	save(1, 300)
	oldest := segPaths(t, dir)[0]
	before := len(segPaths(t, dir))
	if err := l.SaveApplied(280, nil); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateBelow(250); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(oldest); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the oldest segment is still there after the truncation: %v", err)
	}
	save(301, 400) // two rotations or more
	after := len(segPaths(t, dir))
	// 5 of 6 instances were truncated; 100 more saves started 3 segments.
	if after > before-4 {
		t.Fatalf("%d segments before the truncation, %d after", before, after)
	}
	check := func() {
		for i := uint64(250); i <= 400; i++ {
			if a, ok, err := l.Get(i); err != nil || !ok || !equalAccepted(a, acc(i, 1)) {
				t.Fatalf("Get(%d) = %+v, %v, %v", i, a, ok, err)
			}
		}
	}
	check()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTest(t, dir, opts)
	check()
	t.Logf("segments: %d before the truncation, %d after", before, after)
}

// TestLazySyncedBeforeSegmentRotation: lazy groups never stay unsynced in
// a segment left behind: a later synced group syncs only the new one.
func TestLazySyncedBeforeSegmentRotation(t *testing.T) {
	opts := quietOptions()
	opts.SegmentBytes = 8 << 10
	opts.LazySyncBytes = -1 // only the rotations sync
	l := openTest(t, t.TempDir(), opts)
	for i := uint64(1); l.Stats().Segments < 4; i++ {
		mustSave(t, l, Update{Accepted: []Accepted{acc(i, 1)}, NoSync: true})
	}
	st := l.Stats()
	if st.Syncs < st.Segments-1 {
		t.Fatalf("%d segments after lazy groups, only %d syncs", st.Segments, st.Syncs)
	}
}

// TestLazyReadsBeforeApply: a lazy group is applied to Badger only once
// a sync covers it; until then Get and Range serve it, merged in order
// and within Range's byte limit.
func TestLazyReadsBeforeApply(t *testing.T) {
	l := openTest(t, t.TempDir(), applyAtOnce())
	mustSave(t, l, Update{Accepted: []Accepted{acc(1, 1), acc(3, 1), acc(5, 1)}})
	mustSave(t, l, Update{Accepted: []Accepted{acc(2, 1), acc(3, 2), acc(6, 1)}, NoSync: true})
	if len(l.pending) != 1 {
		t.Fatalf("%d lazy groups held, want 1", len(l.pending))
	}
	want := []Accepted{acc(1, 1), acc(2, 1), acc(3, 2), acc(5, 1), acc(6, 1)}
	check := func() {
		t.Helper()
		got, err := l.Range(1, 10, 0)
		if err != nil || len(got) != len(want) {
			t.Fatalf("Range = %+v, %v", got, err)
		}
		for i := range want {
			if !equalAccepted(got[i], want[i]) {
				t.Fatalf("Range[%d] = %+v, want %+v", i, got[i], want[i])
			}
			if a, ok, err := l.Get(want[i].Index); err != nil || !ok || !equalAccepted(a, want[i]) {
				t.Fatalf("Get(%d) = %+v, %v, %v", want[i].Index, a, ok, err)
			}
		}
		two, err := l.Range(1, 10, 2*(len(val(1))+rangeOverhead))
		if err != nil || len(two) != 2 || two[1].Index != 2 {
			t.Fatalf("Range with a limit of two = %+v, %v", two, err)
		}
	}
	check()
	mustSave(t, l, Update{Accepted: []Accepted{acc(10, 1)}})
	if len(l.pending) != 0 {
		t.Fatalf("%d lazy groups held after a synced one", len(l.pending))
	}
	want = append(want, acc(10, 1))
	check()
}

func FuzzReadFrame(f *testing.F) {
	good, _ := encodeFrame(1, 0, []entry{{acceptedKey(7), encodeAccepted(acc(7, 1))}, {keyChosen, encodeUint(keyChosen, kindChosen, 7)}})
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add(make([]byte, 16))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		es, refs, next, err := readFrame(bytes.NewReader(b), uint64(len(b)), 1, 0)
		if err != nil {
			if !errors.Is(err, errFrameEnd) && !errors.Is(err, errBadRecord) {
				t.Fatalf("error neither end nor bad record: %v", err)
			}
			return
		}
		again, refs2 := encodeFrame(1, 0, es)
		if !bytes.Equal(again, b[:next]) {
			t.Fatalf("frame does not re-encode to its bytes")
		}
		for i := range refs {
			if refs[i] != refs2[i] || !bytes.Equal(b[refs[i]:int(refs[i])+len(es[i].val)], es[i].val) {
				t.Fatalf("entry %d: value offset %d, encoder says %d", i, refs[i], refs2[i])
			}
		}
	})
}

// TestInlineRecordsFromBeforeSegments: a log written before segments
// existed keeps its accepted records inline in Badger; they read back
// next to referenced ones, are replaced by later saves and truncated.
func TestInlineRecordsFromBeforeSegments(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, dir, quietOptions())
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	editBadger(t, dir, func(txn *badger.Txn) error {
		if err := txn.Delete(keySegPos); err != nil {
			return err
		}
		for i := uint64(1); i <= 5; i++ {
			if err := txn.Set(acceptedKey(i), encodeAccepted(acc(i, 1))); err != nil {
				return err
			}
		}
		return nil
	})
	l = openTest(t, dir, quietOptions())
	if got := l.LastIndex(); got != 5 {
		t.Fatalf("LastIndex = %d, want 5", got)
	}
	mustSave(t, l, Update{Accepted: []Accepted{acc(3, 2), acc(6, 1)}, Chosen: 6})
	got, err := l.Range(1, 10, 0)
	if err != nil || len(got) != 6 {
		t.Fatalf("Range = %+v, %v", got, err)
	}
	for i, a := range got {
		want := acc(uint64(i+1), 1)
		if i == 2 {
			want = acc(3, 2)
		}
		if !equalAccepted(a, want) {
			t.Fatalf("Range[%d] = %+v, want %+v", i, a, want)
		}
	}
	if err := l.SaveApplied(6, nil); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateBelow(5); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.Get(4); !errors.Is(err, ErrCompacted) {
		t.Fatalf("Get(4) after truncation: %v", err)
	}
	if a, ok, err := l.Get(5); err != nil || !ok || !equalAccepted(a, acc(5, 1)) {
		t.Fatalf("Get(5) = %+v, %v, %v", a, ok, err)
	}
}

// TestReopenReusesAnEmptySegment: opening a log starts writing in its
// newest segment if that one is empty, so reopening without writes does
// not pile up files.
func TestReopenReusesAnEmptySegment(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, dir, quietOptions())
	mustSave(t, l, Update{Accepted: []Accepted{acc(1, 1)}})
	for range 5 {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = openTest(t, dir, quietOptions())
	}
	if n := len(segPaths(t, dir)); n > 2 {
		t.Fatalf("%d segments after 5 reopens without writes", n)
	}
	if a, ok, err := l.Get(1); err != nil || !ok || !equalAccepted(a, acc(1, 1)) {
		t.Fatalf("Get(1) = %+v, %v, %v", a, ok, err)
	}
}
