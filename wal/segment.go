package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// Segments: the log's own write-ahead files (see doc.go, "Write path").
//
// Each group is one frame appended to the current segment file and synced
// there; Badger receives the group's entries only after that sync, with
// every accepted record replaced by a reference into the segment (kindRef).
// A segment is a sequence of frames, ended by the end of the file or by a
// zero length:
//
//	frame  = len(4) | crc32c(body)(4) | body(len)
//	body   = segment(8) | offset(8) | count(4) | count × entry
//	entry  = keyLen(2) | key | valLen(4) | val
//
// An entry is a Badger key and its record, exactly as they would be
// stored inline; the body names its own segment and offset, so a frame
// read from the wrong place fails like a torn one.
const (
	segExt          = ".seg"
	frameHeader     = 8
	frameBodyHeader = 8 + 8 + 4
	// maxFrameLen rejects a garbage length before allocating it: a group
	// is at most one Badger transaction (a few MiB) unless one value or
	// snapshot alone is larger (maxValueLen).
	maxFrameLen = maxValueLen + 1<<20
)

// entry is one Badger key and its record.
type entry struct{ key, val []byte }

// segPos is a place in the segment sequence: segment id and byte offset.
type segPos struct{ seg, off uint64 }

func (p segPos) less(o segPos) bool {
	return p.seg < o.seg || p.seg == o.seg && p.off < o.off
}

func segName(id uint64) string { return fmt.Sprintf("%016d%s", id, segExt) }

// segFiles lists the segment ids in dir, ascending.
func segFiles(dir string) ([]uint64, error) {
	ids, stray, err := numberedFiles(dir, segExt)
	if err == nil && len(stray) > 0 {
		err = fmt.Errorf("%w: stray segment file %s in %s", ErrCorrupt, stray[0], dir)
	}
	return ids, err
}

// encodeFrame frames es for segment seg at offset off. refs[i] is the
// offset of es[i].val in the segment.
func encodeFrame(seg, off uint64, es []entry) (frame []byte, refs []uint64) {
	n := frameHeader + frameBodyHeader
	for _, e := range es {
		n += 2 + len(e.key) + 4 + len(e.val)
	}
	frame = make([]byte, n)
	b := frame[frameHeader:]
	binary.BigEndian.PutUint64(b, seg)
	binary.BigEndian.PutUint64(b[8:], off)
	binary.BigEndian.PutUint32(b[16:], uint32(len(es)))
	p := frameBodyHeader
	refs = make([]uint64, len(es))
	for i, e := range es {
		binary.BigEndian.PutUint16(b[p:], uint16(len(e.key)))
		p += 2 + copy(b[p+2:], e.key)
		binary.BigEndian.PutUint32(b[p:], uint32(len(e.val)))
		p += 4
		refs[i] = off + uint64(frameHeader+p)
		p += copy(b[p:], e.val)
	}
	binary.BigEndian.PutUint32(frame, uint32(len(b)))
	binary.BigEndian.PutUint32(frame[4:], crc32Castagnoli(b))
	return frame, refs
}

// errFrameEnd: no frame here (zero length or end of file).
var errFrameEnd = errors.New("end of segment")

// readFrame reads the frame at off of segment seg in r, which holds size
// bytes. It returns the entries, the offset of each value, and the
// offset after the frame. errFrameEnd means the segment ends at off; any
// other error means the bytes at off are not a whole, intact frame (torn
// or corrupt). A length past the end is refused before anything is
// allocated for it.
func readFrame(r io.ReaderAt, size, seg, off uint64) (es []entry, refs []uint64, next uint64, err error) {
	var h [frameHeader]byte
	if n, err := r.ReadAt(h[:], int64(off)); n < frameHeader {
		if n == 0 && errors.Is(err, io.EOF) {
			return nil, nil, 0, errFrameEnd
		}
		if err == nil || errors.Is(err, io.EOF) {
			err = fmt.Errorf("%w: frame header cut at %d bytes", errBadRecord, n)
		}
		return nil, nil, 0, err
	}
	ln := binary.BigEndian.Uint32(h[:])
	if ln == 0 && binary.BigEndian.Uint32(h[4:]) == 0 {
		return nil, nil, 0, errFrameEnd
	}
	if ln < frameBodyHeader || uint64(ln) > maxFrameLen {
		return nil, nil, 0, fmt.Errorf("%w: frame length %d", errBadRecord, ln)
	}
	if end := off + frameHeader + uint64(ln); end > size {
		return nil, nil, 0, fmt.Errorf("%w: frame of %d bytes at %d runs past the segment's end (%d)", errBadRecord, ln, off, size)
	}
	b := make([]byte, ln)
	if n, err := r.ReadAt(b, int64(off)+frameHeader); n < len(b) {
		if err == nil || errors.Is(err, io.EOF) {
			err = fmt.Errorf("%w: frame cut at %d of %d bytes", errBadRecord, n, len(b))
		}
		return nil, nil, 0, err
	}
	es, vals, err := decodeFrameBody(b, binary.BigEndian.Uint32(h[4:]), seg, off)
	if err != nil {
		return nil, nil, 0, err
	}
	for i := range vals {
		vals[i] += off + frameHeader
	}
	return es, vals, off + frameHeader + uint64(ln), nil
}

// decodeFrameBody checks body against its crc and its claimed place and
// splits it into entries (aliasing body); refs are value offsets within
// body.
func decodeFrameBody(body []byte, crc uint32, seg, off uint64) ([]entry, []uint64, error) {
	if got := crc32Castagnoli(body); got != crc {
		return nil, nil, fmt.Errorf("%w: frame checksum %08x, want %08x", errBadRecord, got, crc)
	}
	if len(body) < frameBodyHeader {
		return nil, nil, fmt.Errorf("%w: frame body %d bytes", errBadRecord, len(body))
	}
	if s, o := binary.BigEndian.Uint64(body), binary.BigEndian.Uint64(body[8:]); s != seg || o != off {
		return nil, nil, fmt.Errorf("%w: frame of segment %d offset %d found at segment %d offset %d", errBadRecord, s, o, seg, off)
	}
	count := binary.BigEndian.Uint32(body[16:])
	p := frameBodyHeader
	var es []entry
	var refs []uint64
	for range count {
		if len(body)-p < 2 {
			return nil, nil, fmt.Errorf("%w: frame entry cut", errBadRecord)
		}
		kl := int(binary.BigEndian.Uint16(body[p:]))
		p += 2
		if len(body)-p < kl+4 {
			return nil, nil, fmt.Errorf("%w: frame entry cut", errBadRecord)
		}
		key := body[p : p+kl]
		p += kl
		vl := int(binary.BigEndian.Uint32(body[p:]))
		p += 4
		if len(body)-p < vl {
			return nil, nil, fmt.Errorf("%w: frame entry cut", errBadRecord)
		}
		es = append(es, entry{key: key, val: body[p : p+vl]})
		refs = append(refs, uint64(p))
		p += vl
	}
	if p != len(body) {
		return nil, nil, fmt.Errorf("%w: %d bytes after the frame's entries", errBadRecord, len(body)-p)
	}
	return es, refs, nil
}

// segments holds the open segment files for reads and the current one
// for appends. Readers take mu shared; deleting a segment takes it
// exclusively.
type segments struct {
	dir   string
	mu    sync.RWMutex
	files map[uint64]*os.File
	// maxIndex is the highest accepted index each segment holds (as far
	// as this process knows; m/segmax/<id> in Badger across restarts).
	maxIndex map[uint64]uint64
}

func newSegments(dir string) *segments {
	return &segments{dir: dir, files: map[uint64]*os.File{}, maxIndex: map[uint64]uint64{}}
}

func (s *segments) maxOf(id uint64) uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.maxIndex[id]
}

func (s *segments) setMax(id, index uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.maxIndex[id] = index
}

// ids returns the open segments' ids, ascending.
func (s *segments) ids() []uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]uint64, 0, len(s.files))
	for id := range s.files {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

func (s *segments) path(id uint64) string { return filepath.Join(s.dir, segName(id)) }

// open opens segment id for reads and appends.
func (s *segments) open(id uint64) (*os.File, error) { return s.openMode(id, false) }

// openMode opens segment id for reads only when readOnly (inspection).
func (s *segments) openMode(id uint64, readOnly bool) (*os.File, error) {
	flag := os.O_RDWR
	if readOnly {
		flag = os.O_RDONLY
	}
	f, err := os.OpenFile(s.path(id), flag, 0)
	if err != nil {
		return nil, fmt.Errorf("wal: open segment %d: %w", id, err)
	}
	s.mu.Lock()
	s.files[id] = f
	s.mu.Unlock()
	return f, nil
}

// create makes segment id, durably (the directory entry too).
func (s *segments) create(id uint64) (*os.File, error) {
	f, err := os.OpenFile(s.path(id), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("wal: create segment %d: %w", id, err)
	}
	if err := syncDir(s.dir); err != nil {
		f.Close()
		return nil, err
	}
	s.mu.Lock()
	s.files[id] = f
	s.mu.Unlock()
	return f, nil
}

// remove deletes segment id.
func (s *segments) remove(id uint64) error {
	s.mu.Lock()
	f := s.files[id]
	delete(s.files, id)
	delete(s.maxIndex, id)
	s.mu.Unlock()
	if f != nil {
		f.Close()
	}
	if err := os.Remove(s.path(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("wal: remove segment %d: %w", id, err)
	}
	return nil
}

// errSegmentGone: a reference into a segment that is no longer there
// (deleted after a truncation the reader raced with, or lost).
var errSegmentGone = errors.New("segment missing")

// readAt reads n bytes at off of segment id.
func (s *segments) readAt(id, off uint64, n int) ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	f := s.files[id]
	if f == nil {
		return nil, fmt.Errorf("%w: segment %d", errSegmentGone, id)
	}
	b := make([]byte, n)
	if m, err := f.ReadAt(b, int64(off)); m < n {
		if err == nil || errors.Is(err, io.EOF) {
			err = fmt.Errorf("%w: segment %d holds %d of %d bytes at %d", errBadRecord, id, m, n, off)
		}
		return nil, err
	}
	return b, nil
}

func (s *segments) closeAll() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var first error
	for id, f := range s.files {
		if err := f.Close(); err != nil && first == nil {
			first = fmt.Errorf("wal: close segment %d: %w", id, err)
		}
		delete(s.files, id)
	}
	return first
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("wal: open %s for sync: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("wal: sync directory %s: %w", dir, err)
	}
	return nil
}
