package lazyfs

import (
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// pageSize is the granularity of the data undo: what a page held at the
// last sync is saved whole before its first change.
const pageSize = 4096

// fileState is one backing inode's unsynced data: its durable size and
// the durable content of every page changed since the last sync.
//
// Invariant: every page that starts below size and whose backing bytes
// below size differ from the durable ones has an entry in pages; a saved
// page's bytes at file offsets >= size are zero.
type fileState struct {
	fd int // O_RDWR on the backing inode, ours; path-independent

	// io: writes hold it shared from their save until their pwrite ends,
	// syncs and truncates exclusively, so a page is never saved after it
	// was changed.
	io sync.RWMutex

	mu    sync.Mutex
	size  int64
	pages map[int64][]byte
	// allocEnd is the size a fallocate grew the file to since the last
	// sync (0: none): a metadata change, durable at the next journal
	// commit (commitAlloc), unlike the data written into it.
	allocEnd int64
}

func (f *fileState) savedBytes() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return int64(len(f.pages)) * pageSize
}

// readPage returns page p as the backing file holds it now, with every
// byte at offset >= limit zeroed.
func (f *fileState) readPage(p, limit int64) ([]byte, error) {
	buf := make([]byte, pageSize)
	n, err := unix.Pread(f.fd, buf, p*pageSize)
	if err != nil {
		return nil, fmt.Errorf("lazyfs: save page %d: %w", p, err)
	}
	clear(buf[max(n, 0):])
	if cut := limit - p*pageSize; cut < pageSize {
		clear(buf[max(cut, 0):])
	}
	return buf, nil
}

// saveRange saves every durable page overlapping [off, end) not saved
// yet; with dataOnly, pages in holes of the backing file are skipped.
// Caller holds f.mu.
func (f *fileState) saveRange(off, end int64, dataOnly bool) error {
	end = min(end, f.size)
	for p := off / pageSize; p*pageSize < end; {
		data, hole := p*pageSize, end
		if dataOnly {
			var err error
			if data, hole, err = f.dataExtent(p*pageSize, end); err != nil {
				return err
			}
			if data >= end {
				return nil
			}
		}
		for q := max(p, data/pageSize); q*pageSize < hole; q++ {
			if _, ok := f.pages[q]; ok {
				continue
			}
			b, err := f.readPage(q, f.size)
			if err != nil {
				return err
			}
			f.pages[q] = b
		}
		p = max(p+1, (hole+pageSize-1)/pageSize)
	}
	return nil
}

// dataExtent finds the first range holding data at or after off, below
// end: [data, hole), hole capped at end; data >= end when there is none.
// Without SEEK_DATA on the backing filesystem, everything is data.
func (f *fileState) dataExtent(off, end int64) (data, hole int64, err error) {
	data, err = unix.Seek(f.fd, off, unix.SEEK_DATA)
	switch {
	case errors.Is(err, unix.ENXIO): // no data at or after off (or off beyond the end)
		return end, end, nil
	case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP):
		return off, end, nil
	case err != nil:
		return 0, 0, fmt.Errorf("lazyfs: seek data: %w", err)
	}
	if data >= end {
		return end, end, nil
	}
	hole, err = unix.Seek(f.fd, data, unix.SEEK_HOLE)
	if err != nil {
		return data, end, nil // unknown: the rest counts as data
	}
	return data, min(hole, end), nil
}

// beforeChange is called before [off, end) of the backing file changes
// (a write; data moved by a collapse or insert of a range).
func (f *fileState) beforeChange(off, end int64) error {
	if end <= off {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.saveRange(off, end, false)
}

// beforeCut is called before [off, end) of the backing file becomes
// zeros or goes (a truncate, a hole punched or a range zeroed). Only its
// data pages are saved: a page not saved holds its durable bytes, so one
// in a hole is durably zeros, which is also what a revert's truncate to
// the durable size leaves there, and a later write to it saves it then.
// (Badger sizes its files at 64 or 128 MiB with ftruncate, syncs them and
// truncates them to what it used at close: saving every page of such a
// cut took seconds and held hundreds of MiB of zeros.)
func (f *fileState) beforeCut(off, end int64) error {
	if end <= off {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.saveRange(off, end, true)
}

// synced makes the whole file durable as the backing file holds it now.
// Caller holds io exclusively.
func (f *fileState) synced() error {
	var st unix.Stat_t
	if err := unix.Fstat(f.fd, &st); err != nil {
		return err
	}
	f.mu.Lock()
	f.size, f.pages, f.allocEnd = st.Size, map[int64][]byte{}, 0
	f.mu.Unlock()
	return nil
}

// allocated records that a fallocate grew the file to end; it reports
// whether that is beyond the durable size (then commitAlloc has work).
func (f *fileState) allocated(end int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if end <= f.size {
		return false
	}
	f.allocEnd = max(f.allocEnd, end)
	return true
}

// commitAlloc makes the size a fallocate grew the file to durable, as
// ext4's journal commit does (the new range reads as zeros; data written
// into it stays unsynced), capped at the file's current size (a later
// truncate is in the same journal). Caller holds io shared.
func (f *fileState) commitAlloc() error {
	var st unix.Stat_t
	if err := unix.Fstat(f.fd, &st); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	end := min(f.allocEnd, st.Size)
	f.allocEnd = 0
	if end <= f.size {
		return nil
	}
	return f.extendDurable(end)
}

// extendDurable moves the durable size up to end: pages from the old
// durable end on are saved as what was durable below it and zeros after
// it. Caller holds f.mu.
func (f *fileState) extendDurable(end int64) error {
	old := f.size
	for p := old / pageSize; p*pageSize < end; p++ {
		if _, ok := f.pages[p]; ok {
			continue
		}
		if p*pageSize < old {
			b, err := f.readPage(p, old) // unsaved: its bytes below old are durable
			if err != nil {
				return err
			}
			f.pages[p] = b
		} else {
			f.pages[p] = make([]byte, pageSize)
		}
	}
	f.size = end
	return nil
}

// syncedWrite makes data, just written at off, durable and nothing else
// (an O_SYNC, O_DSYNC or O_DIRECT write): saved pages take the new bytes,
// and when the write ends beyond the durable size the gap becomes durable
// as zeros. Caller holds io shared.
func (f *fileState) syncedWrite(off int64, data []byte) error {
	end := off + int64(len(data))
	f.mu.Lock()
	defer f.mu.Unlock()
	if end > f.size {
		// The bytes of this write are copied in below.
		if err := f.extendDurable(end); err != nil {
			return err
		}
	}
	for p := off / pageSize; p*pageSize < end; p++ {
		b, ok := f.pages[p]
		if !ok {
			continue // unsaved below the old end: the backing bytes are the durable ones
		}
		lo, hi := max(off, p*pageSize), min(end, (p+1)*pageSize)
		copy(b[lo-p*pageSize:hi-p*pageSize], data[lo-off:hi-off])
	}
	return nil
}

// revert puts the durable content back: truncate to the durable size,
// then write every saved page.
func (f *fileState) revert() (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := unix.Ftruncate(f.fd, f.size); err != nil {
		return 0, fmt.Errorf("lazyfs: revert size: %w", err)
	}
	var n int64
	for p, b := range f.pages {
		if p*pageSize >= f.size {
			continue
		}
		b = b[:min(pageSize, f.size-p*pageSize)]
		if _, err := unix.Pwrite(f.fd, b, p*pageSize); err != nil {
			return n, fmt.Errorf("lazyfs: revert page %d: %w", p, err)
		}
		n += int64(len(b))
	}
	return n, nil
}
