package wal

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// warnRecorder keeps the messages of Warn and Error records.
type warnRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnRecorder) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnRecorder) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, r.Message)
	return nil
}
func (w *warnRecorder) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnRecorder) WithGroup(string) slog.Handler      { return w }

func (w *warnRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.msgs
	w.msgs = nil
	return m
}

// segmentTail returns where segment id's frames end and the file's size,
// failing unless every byte between is zero.
func segmentTail(t *testing.T, dir string, id uint64) (framesEnd, size uint64) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, segName(id)))
	if err != nil {
		t.Fatal(err)
	}
	end := uint64(0)
	if _, err := walkSegment(bytes.NewReader(b), "", uint64(len(b)), id, 0, func(_ []entry, _ []uint64, next uint64) error {
		end = next
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b[end:], make([]byte, len(b)-int(end))) {
		t.Fatalf("segment %d: bytes after its last frame (offset %d) are not all zeros", id, end)
	}
	return end, uint64(len(b))
}

// TestZeroAheadIsACleanEnd: frames are written over zeros the segment
// already holds (at most ZeroAheadBytes past the last frame, never past
// SegmentBytes); those zeros are no torn tail: Open neither warns nor
// loses anything, it cuts them from the newest segment only, and Inspect
// reports no problem. With ZeroAheadBytes negative every frame appends.
func TestZeroAheadIsACleanEnd(t *testing.T) {
	dir := t.TempDir()
	rec := &warnRecorder{}
	opts := quietOptions()
	opts.Logger = slog.New(rec)
	opts.SegmentBytes, opts.ZeroAheadBytes = 8<<10, 2<<10
	l := openTest(t, dir, opts)
	for i := uint64(1); i <= 400; i++ {
		mustSave(t, l, Update{Accepted: []Accepted{acc(i, 1)}, Chosen: i - 1})
	}
	ids, err := segFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) < 3 {
		t.Fatalf("segments %v: want several", ids)
	}
	for _, id := range ids {
		end, size := segmentTail(t, dir, id)
		if size > uint64(opts.SegmentBytes) || size-end > uint64(opts.ZeroAheadBytes) {
			t.Fatalf("segment %d: frames end at %d, file is %d bytes (zero-ahead %d, segment %d)", id, end, size, opts.ZeroAheadBytes, opts.SegmentBytes)
		}
		if id == ids[len(ids)-1] && size == end {
			t.Fatalf("newest segment %d: %d bytes, no zeros past its frames", id, size)
		}
	}
	newest := ids[len(ids)-1]
	end, _ := segmentTail(t, dir, newest)
	l.Close()

	r, err := Inspect(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Problems) != 0 {
		t.Fatalf("Inspect: %+v, want no problem", r.Problems)
	}
	l = openTest(t, dir, opts)
	if w := rec.take(); len(w) != 0 {
		t.Fatalf("Open logged %q", w)
	}
	if _, size := segmentTail(t, dir, newest); size != end {
		t.Fatalf("newest segment at Open: %d bytes, want cut to its frames' end %d", size, end)
	}
	for i := uint64(401); i <= 450; i++ {
		mustSave(t, l, Update{Accepted: []Accepted{acc(i, 1)}})
	}
	l.Close()
	l = openTest(t, dir, opts)
	defer l.Close()
	if w := rec.take(); len(w) != 0 {
		t.Fatalf("second Open logged %q", w)
	}
	if got := l.LastIndex(); got != 450 {
		t.Fatalf("LastIndex %d, want 450", got)
	}
	for _, i := range []uint64{1, 200, 400, 450} {
		if a, ok, err := l.Get(i); err != nil || !ok || !equalAccepted(a, acc(i, 1)) {
			t.Fatalf("Get(%d) = %+v %v %v", i, a, ok, err)
		}
	}

	off := t.TempDir()
	opts.ZeroAheadBytes = -1
	lo := openTest(t, off, opts)
	for i := uint64(1); i <= 20; i++ {
		mustSave(t, lo, Update{Accepted: []Accepted{acc(i, 1)}})
	}
	ids, err = segFiles(off)
	if err != nil {
		t.Fatal(err)
	}
	if end, size := segmentTail(t, off, ids[len(ids)-1]); size != end {
		t.Fatalf("zero-ahead off: segment of %d bytes, frames end at %d", size, end)
	}
}
