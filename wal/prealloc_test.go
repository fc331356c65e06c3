package wal

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// logBuffer collects what a Log logs at warning level and above.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *logBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *logBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

func warnings(o Options) (Options, *logBuffer) {
	w := &logBuffer{}
	o.Logger = slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return o, w
}

func checkRecords(t *testing.T, l *Log, n uint64) {
	t.Helper()
	if got := l.LastIndex(); got != n {
		t.Fatalf("LastIndex %d, want %d", got, n)
	}
	for i := uint64(1); i <= n; i++ {
		a, ok, err := l.Get(i)
		if err != nil || !ok || !equalAccepted(a, acc(i, 1)) {
			t.Fatalf("Get(%d) = %+v %v %v", i, a, ok, err)
		}
	}
}

func segSize(t *testing.T, dir string, id uint64) int64 {
	t.Helper()
	fi, err := os.Stat(filepath.Join(dir, segName(id)))
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestZeroTailIsTheEnd: the zeros after the last frame of a zero-filled
// segment are where its frames end, not a torn tail: Open keeps every
// record, warns about nothing, Inspect reports no problem; the segments
// written are full size, and a new segment was prepared for the next
// Open.
func TestZeroTailIsTheEnd(t *testing.T) {
	dir := t.TempDir()
	opts, w := warnings(quietOptions())
	opts.SegmentBytes = 4 << 10
	l := openTest(t, dir, opts)
	for i := uint64(1); i <= 200; i++ {
		mustSave(t, l, Update{Accepted: []Accepted{acc(i, 1)}})
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	ids, err := segFiles(dir)
	if err != nil || len(ids) < 3 {
		t.Fatalf("segments %v %v; want several", ids, err)
	}
	for _, id := range ids {
		if got := segSize(t, dir, id); got != opts.SegmentBytes {
			t.Fatalf("segment %d is %d bytes, want %d (zero-filled)", id, got, opts.SegmentBytes)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, prepReady)); err != nil {
		t.Fatalf("no prepared segment after Close: %v", err)
	}
	r, err := Inspect(dir, opts)
	if err != nil || len(r.Problems) != 0 {
		t.Fatalf("Inspect = %+v %v, want no problems", r, err)
	}
	l = openTest(t, dir, opts)
	checkRecords(t, l, 200)
	mustSave(t, l, Update{Accepted: []Accepted{acc(201, 1)}})
	if s := w.String(); s != "" {
		t.Fatalf("warnings on a clean zero tail:\n%s", s)
	}
	// The newest segment's unused zeros were given back; the new one
	// came from the prepared file.
	if got := segSize(t, dir, ids[len(ids)-1]); got >= opts.SegmentBytes {
		t.Fatalf("previous newest segment kept its %d bytes of zeros", got)
	}
	if got := segSize(t, dir, ids[len(ids)-1]+1); got != opts.SegmentBytes {
		t.Fatalf("new segment is %d bytes, want %d", got, opts.SegmentBytes)
	}
}

// TestPartialFrameThenZerosCut: a frame cut by a crash inside a
// zero-filled segment (its first bytes, zeros after) is a torn tail:
// logged and cut off, the records before it kept.
func TestPartialFrameThenZerosCut(t *testing.T) {
	dir := t.TempDir()
	opts, w := warnings(quietOptions())
	opts.SegmentBytes = 64 << 10
	seg := twentyPromisesWith(t, dir, opts)
	starts := frameStarts(t, dir, seg)
	end := starts[len(starts)-1]
	f, _ := encodeFrame(seg, end, []entry{{acceptedKey(21), encodeAccepted(acc(21, 1))}})
	patchFile(t, filepath.Join(dir, segName(seg)), func(b []byte) []byte { copy(b[end:], f[:len(f)/2]); return b })
	l := openTest(t, dir, opts)
	if l.LastIndex() != 20 || l.HardState().Promised.Round != 20 {
		t.Fatalf("last %d promised %v, want 20, 20", l.LastIndex(), l.HardState().Promised)
	}
	if !strings.Contains(w.String(), "torn tail") {
		t.Fatalf("no torn-tail warning for a partial frame; log:\n%s", w.String())
	}
	if got := segSize(t, dir, seg); uint64(got) != end {
		t.Fatalf("segment %d bytes, want cut to %d", got, end)
	}
}

// TestReopenHalfFilled: a crash while a segment was being zero-filled
// leaves either the background preparation half done, or the newest
// segment (zero-filled at Open, before any frame) short. Open drops the
// first, fills the second, and loses nothing; writes and rotations go on.
func TestReopenHalfFilled(t *testing.T) {
	dir := t.TempDir()
	opts, w := warnings(quietOptions())
	opts.SegmentBytes = 16 << 10
	l := openTest(t, dir, opts)
	for i := uint64(1); i <= 50; i++ {
		mustSave(t, l, Update{Accepted: []Accepted{acc(i, 1)}})
	}
	l.Close()
	ids, _ := segFiles(dir)
	newest := ids[len(ids)-1] + 1
	// What a crash in either fill leaves: a file of zeros, part written.
	if err := os.Remove(filepath.Join(dir, prepReady)); err != nil {
		t.Fatal(err)
	}
	half := make([]byte, opts.SegmentBytes/2)
	for _, name := range []string{prepFilling, segName(newest)} {
		if err := os.WriteFile(filepath.Join(dir, name), half, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	l = openTest(t, dir, opts)
	checkRecords(t, l, 50)
	if _, err := os.Stat(filepath.Join(dir, prepFilling)); err == nil {
		t.Fatal("the half-filled preparation is still there")
	}
	if got := segSize(t, dir, newest); got != opts.SegmentBytes {
		t.Fatalf("half-filled newest segment reused at %d bytes, want %d", got, opts.SegmentBytes)
	}
	for i := uint64(51); i <= 200; i++ {
		mustSave(t, l, Update{Accepted: []Accepted{acc(i, 1)}})
	}
	l.Close()
	l = openTest(t, dir, opts)
	checkRecords(t, l, 200)
	if s := w.String(); s != "" {
		t.Fatalf("warnings:\n%s", s)
	}
}

// TestOpenAppendedLog: a log whose segments grew by appending (written
// before segments were zero-filled) opens with every record; its torn
// tail is still cut, and new segments are zero-filled.
func TestOpenAppendedLog(t *testing.T) {
	dir := t.TempDir()
	opts := quietOptions()
	opts.SegmentBytes, opts.appendSegments = 16<<10, true
	l := openTest(t, dir, opts)
	for i := uint64(1); i <= 200; i++ {
		mustSave(t, l, Update{Accepted: []Accepted{acc(i, 1)}})
	}
	l.Close()
	ids, _ := segFiles(dir)
	last := ids[len(ids)-1]
	if segSize(t, dir, last) >= opts.SegmentBytes {
		t.Fatal("the appended segment is full size already")
	}
	opts.appendSegments = false
	l = openTest(t, dir, opts)
	checkRecords(t, l, 200)
	for i := uint64(201); i <= 400; i++ {
		mustSave(t, l, Update{Accepted: []Accepted{acc(i, 1)}})
	}
	l.Close()
	after, _ := segFiles(dir)
	if got := segSize(t, dir, after[len(after)-2]); got != opts.SegmentBytes {
		t.Fatalf("segment %d written after the upgrade is %d bytes, want %d", after[len(after)-2], got, opts.SegmentBytes)
	}
	l = openTest(t, dir, opts)
	checkRecords(t, l, 400)
}
