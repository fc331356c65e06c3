package wal

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Tracking Badger's mutable memtable, so that several groups can be in
// flight (see doc.go, "Pipelined syncs").
//
// Badger writes a transaction into the write-ahead file of its current
// memtable, <fid>.mem, through a shared mapping, and replaces the memtable
// ("rotation": a new <fid+1>.mem) at the START of a write when the
// current one is full: its arena (skiplist) or its file reached
// MemTableSize. fillBound holds an upper bound on each, counted from the
// rotation: if both are below MemTableSize before a write, that write
// cannot rotate. The bounds per entry follow Badger v4's layout:
//
//	skiplist: node <= 96+7 bytes, key+8 (version), value+2+1 (meta, user meta, expiry)
//	file:     header <= 2+5+5+10, key+8, value, crc 4; one txn-end entry per txn
//	          (in the file only, not in the skiplist)
//
// Two bounds, not one of their worst cases summed: the closer the bound,
// the fewer writes before a rotation wait for every group in flight.
//
// TestFillBoundHolds checks that every rotation happens where the bound
// says it may, so a Badger upgrade that changes the layout fails a test.
const (
	fillArenaPerEntry = 114      // node 103 + version 8 + value meta 3
	fillFilePerEntry  = 34       // header 22 + version 8 + crc 4
	fillPerTxn        = 128      // file only: txn-end entry "!badger!txn"+8, decimal ts, header, crc
	fillBase          = 64 << 10 // arena head node, file header, Badger's own writes at Open
	fillTruncate      = 16 << 10 // a truncation's m/first record (and slack)
	memFileExt        = ".mem"
)

func (l *Log) memPath(fid uint64) string {
	return filepath.Join(l.dir, fmt.Sprintf("%05d%s", fid, memFileExt))
}

// newestMemFid returns the highest <fid>.mem in dir: Badger's current
// memtable right after Open (Open always starts a fresh one).
func newestMemFid(dir string) (uint64, error) {
	fids, err := memFids(dir)
	if err != nil {
		return 0, err
	}
	if len(fids) == 0 {
		return 0, fmt.Errorf("wal: no memtable file in %s", dir)
	}
	return fids[len(fids)-1], nil
}

// followRotationLocked advances l.mem.fid past memtables Badger created
// since the last look; it reports whether there were any. Apply path,
// l.mem.mu held.
func (l *Log) followRotationLocked() bool {
	rotated := false
	for {
		if !fileExists(l.memPath(l.mem.fid + 1)) {
			return rotated
		}
		l.mem.fid++
		l.stats.rotations.Add(1)
		rotated = true
	}
}

// followRotation is followRotationLocked after a write outside the fill
// model (DropPrefix, a truncation): the fill restarts if Badger rotated.
func (l *Log) followRotation() {
	l.mem.mu.Lock()
	defer l.mem.mu.Unlock()
	if l.followRotationLocked() {
		l.mem.fill = newFill(fillBase)
	}
}

// memFids lists the memtable files in dir, ascending.
func memFids(dir string) ([]uint64, error) {
	fids, _, err := numberedFiles(dir, memFileExt)
	return fids, err
}

// numberedFiles lists the files <number><ext> in dir, ascending, and the
// names ending in ext that are not a number.
func numberedFiles(dir, ext string) (nums []uint64, stray []string, err error) {
	es, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("wal: list %s: %w", dir, err)
	}
	for _, e := range es {
		name, ok := strings.CutSuffix(e.Name(), ext)
		if !ok {
			continue
		}
		if v, err := strconv.ParseUint(name, 10, 64); err == nil {
			nums = append(nums, v)
		} else {
			stray = append(stray, e.Name())
		}
	}
	slices.Sort(nums)
	return nums, stray, nil
}

// fillBound bounds the current memtable's arena and file, in bytes.
type fillBound struct{ arena, file int64 }

func newFill(base int64) fillBound { return fillBound{base, base} }

// full reports whether a write might rotate the memtable.
func (f fillBound) full(memTableSize int64) bool {
	return f.arena >= memTableSize || f.file >= memTableSize
}

func (f fillBound) max() int64 { return max(f.arena, f.file) }

// addEntry adds one written entry.
func (f *fillBound) addEntry(key, val []byte) {
	n := int64(len(key) + len(val))
	f.arena += n + fillArenaPerEntry
	f.file += n + fillFilePerEntry
}

// syncMemFile makes memtable file fid durable: fdatasync, as Badger's own
// msync(MS_SYNC) does on Linux (msync is vfs_fsync_range with datasync).
// A missing file was flushed to a synced table and deleted: durable.
func (l *Log) syncMemFile(fid uint64) error {
	f, err := os.Open(l.memPath(fid))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("wal: open memtable file for sync: %w", err)
	}
	defer f.Close()
	if err := fdatasync(f); err != nil {
		return fmt.Errorf("wal: sync memtable file %d: %w", fid, err)
	}
	return nil
}

func fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}
