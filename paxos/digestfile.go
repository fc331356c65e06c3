package paxos

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
)

// The digest file (Dir/logdigests) keeps this node's finished range
// digests across restarts: 52-byte records, appended as ranges finish,
// without a sync:
//
//	first u64 | last u64 | sha256 [32] | crc32c(first..sha256) u32   (big endian)
//
// Losing its tail in a crash is harmless: at start the node re-hashes,
// from its own log, the ranges it finished since the last record (up to
// digestsSent of them), and re-applying entries after a restart finishes
// the same ranges again. A torn or damaged record fails its CRC and is
// skipped (an unknown range, never a false mismatch). The file is
// rewritten with only the newest digestKeepOwn records once it holds four
// times as many.

const (
	digestFileName   = "logdigests"
	digestRecordSize = 8 + 8 + 32 + 4
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

type digestFile struct {
	path string
	f    *os.File
	n    int // records in the file
}

func encodeDigestRecord(b []byte, d RangeDigest) []byte {
	start := len(b)
	b = binary.BigEndian.AppendUint64(b, d.First)
	b = binary.BigEndian.AppendUint64(b, d.Last)
	b = append(b, d.Sum[:]...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b[start:], crcTable))
}

// readDigestFile returns the valid records of the file at path, in file
// order (nil if there is none).
func readDigestFile(path string) ([]RangeDigest, int, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	var out []RangeDigest
	n := len(b) / digestRecordSize
	for i := 0; i < n; i++ {
		r := b[i*digestRecordSize : (i+1)*digestRecordSize]
		if crc32.Checksum(r[:48], crcTable) != binary.BigEndian.Uint32(r[48:]) {
			continue
		}
		d := RangeDigest{First: binary.BigEndian.Uint64(r[0:]), Last: binary.BigEndian.Uint64(r[8:])}
		copy(d.Sum[:], r[16:48])
		if d.First == 0 || d.Last < d.First {
			continue
		}
		out = append(out, d)
	}
	return out, n, nil
}

// openDigestFile loads dir's digest file and opens it for appending. A
// file with a torn tail is rewritten whole, so new records stay aligned.
func openDigestFile(dir string) (*digestFile, []RangeDigest, error) {
	path := filepath.Join(dir, digestFileName)
	ds, n, err := readDigestFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	df := &digestFile{path: path, n: n}
	if st, err := os.Stat(path); err == nil && st.Size() != int64(n*digestRecordSize) {
		if err := df.rewrite(ds); err != nil {
			return nil, nil, err
		}
	}
	if df.f == nil {
		if df.f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err != nil {
			return nil, nil, err
		}
	}
	return df, ds, nil
}

// rewrite replaces the file with ds (at most the newest digestKeepOwn)
// and leaves it open for appending.
func (df *digestFile) rewrite(ds []RangeDigest) error {
	if len(ds) > digestKeepOwn {
		ds = ds[len(ds)-digestKeepOwn:]
	}
	var b []byte
	for _, d := range ds {
		b = encodeDigestRecord(b, d)
	}
	tmp := df.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, df.path); err != nil {
		return err
	}
	if df.f != nil {
		df.f.Close()
	}
	f, err := os.OpenFile(df.path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		df.f = nil
		return err
	}
	df.f, df.n = f, len(ds)
	return nil
}

// append adds d; own is the book's list to rewrite from when the file
// grew past four times digestKeepOwn.
func (df *digestFile) append(d RangeDigest, own func() []RangeDigest) error {
	if df.f == nil {
		return errors.New("digest file not open")
	}
	if df.n >= 4*digestKeepOwn {
		return df.rewrite(own())
	}
	if _, err := df.f.Write(encodeDigestRecord(nil, d)); err != nil {
		return err
	}
	df.n++
	return nil
}

func (df *digestFile) close() {
	if df != nil && df.f != nil {
		df.f.Close()
		df.f = nil
	}
}
