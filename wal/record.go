package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
)

// Record format (the Badger value of every key):
//
//	version(1) | kind(1) | payload(n) | crc32c(4, big-endian)
//
// The CRC32C (Castagnoli) covers the Badger key, then version, kind and
// payload, so a record that is torn, bit-flipped, or stored under another
// key fails the check. Payloads:
//
//	kindAccepted  round(8) node(4) len(4) value(len)
//	kindPromised  round(8) node(4)
//	kindChosen    index(8)
//	kindFirst     index(8)
//	kindApplied   index(8) len(4) snapshot(len)
//	kindFormat    "phxgo-wal"
//	kindBase      index(8) len(4) snapshot(len)   (the state after index = FirstIndex-1)
//	kindRef       segment(8) offset(8) len(4)     (an accepted record kept in a segment)
//	kindSegPos    segment(8) offset(8)            (the end of the last frame Badger holds)
//	kindSegMax    index(8)                        (the highest instance a segment holds)
//	kindMembership (empty)                        (a membership history was saved: membership.go)
const (
	recordVersion = 1
	recordHeader  = 2
	recordTrailer = 4
	recordMin     = recordHeader + recordTrailer
)

type recordKind byte

const (
	kindAccepted recordKind = 1 + iota
	kindPromised
	kindChosen
	kindFirst
	kindApplied
	kindFormat
	kindBase
	kindRef
	kindSegPos
	kindSegMax
	kindMembership
)

var formatMagic = []byte("phxgo-wal")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errBadRecord is the reason inside an ErrCorrupt; never returned bare.
var errBadRecord = errors.New("bad record")

func recordCRC(key, body []byte) uint32 {
	c := crc32.Update(0, castagnoli, key)
	return crc32.Update(c, castagnoli, body)
}

// encodeRecord frames payload as a record of kind k stored under key.
func encodeRecord(key []byte, k recordKind, payload []byte) []byte {
	rec := make([]byte, recordHeader+len(payload)+recordTrailer)
	rec[0] = recordVersion
	rec[1] = byte(k)
	copy(rec[recordHeader:], payload)
	body := rec[:len(rec)-recordTrailer]
	binary.BigEndian.PutUint32(rec[len(body):], recordCRC(key, body))
	return rec
}

// decodeRecord checks rec's frame and returns its payload (aliasing rec).
func decodeRecord(key, rec []byte, want recordKind) ([]byte, error) {
	if len(rec) < recordMin {
		return nil, fmt.Errorf("%w: %d bytes, shorter than a header", errBadRecord, len(rec))
	}
	body := rec[:len(rec)-recordTrailer]
	if got, sum := binary.BigEndian.Uint32(rec[len(body):]), recordCRC(key, body); got != sum {
		return nil, fmt.Errorf("%w: checksum %08x, want %08x", errBadRecord, got, sum)
	}
	if rec[0] != recordVersion {
		return nil, fmt.Errorf("%w: version %d, want %d", errBadRecord, rec[0], recordVersion)
	}
	if recordKind(rec[1]) != want {
		return nil, fmt.Errorf("%w: kind %d, want %d", errBadRecord, rec[1], want)
	}
	return body[recordHeader:], nil
}

// encodeAccepted frames a as encodeRecord would, writing the value once:
// it is the one record that carries commands (up to a MiB), and the copy
// through a payload buffer was half of the wal's encoding cost.
func encodeAccepted(a Accepted) []byte {
	rec := make([]byte, recordHeader+16+len(a.Value)+recordTrailer)
	rec[0] = recordVersion
	rec[1] = byte(kindAccepted)
	p := rec[recordHeader:]
	binary.BigEndian.PutUint64(p, a.Ballot.Round)
	binary.BigEndian.PutUint32(p[8:], a.Ballot.Node)
	binary.BigEndian.PutUint32(p[12:], uint32(len(a.Value)))
	copy(p[16:], a.Value)
	body := rec[:len(rec)-recordTrailer]
	binary.BigEndian.PutUint32(rec[len(body):], recordCRC(acceptedKey(a.Index), body))
	return rec
}

// decodeAccepted decodes the record of instance index. The error wraps
// ErrCorrupt and names the instance. The value is a fresh copy.
func decodeAccepted(index uint64, rec []byte) (Accepted, error) {
	p, err := decodeRecord(acceptedKey(index), rec, kindAccepted)
	if err == nil && len(p) < 16 {
		err = fmt.Errorf("%w: accepted payload %d bytes", errBadRecord, len(p))
	}
	if err == nil {
		if n := binary.BigEndian.Uint32(p[12:]); uint64(n) != uint64(len(p)-16) {
			err = fmt.Errorf("%w: value length %d, record holds %d", errBadRecord, n, len(p)-16)
		}
	}
	if err != nil {
		return Accepted{}, fmt.Errorf("%w: instance %d: %w", ErrCorrupt, index, err)
	}
	return Accepted{
		Index:  index,
		Ballot: Ballot{Round: binary.BigEndian.Uint64(p), Node: binary.BigEndian.Uint32(p[8:])},
		Value:  append([]byte{}, p[16:]...),
	}, nil
}

func encodeBallot(key []byte, b Ballot) []byte {
	p := make([]byte, 12)
	binary.BigEndian.PutUint64(p, b.Round)
	binary.BigEndian.PutUint32(p[8:], b.Node)
	return encodeRecord(key, kindPromised, p)
}

func decodeBallot(key, rec []byte) (Ballot, error) {
	p, err := decodeRecord(key, rec, kindPromised)
	if err == nil && len(p) != 12 {
		err = fmt.Errorf("%w: ballot payload %d bytes", errBadRecord, len(p))
	}
	if err != nil {
		return Ballot{}, corruptMeta(key, err)
	}
	return Ballot{Round: binary.BigEndian.Uint64(p), Node: binary.BigEndian.Uint32(p[8:])}, nil
}

func encodeUint(key []byte, k recordKind, v uint64) []byte {
	return encodeRecord(key, k, binary.BigEndian.AppendUint64(nil, v))
}

func decodeUint(key, rec []byte, k recordKind) (uint64, error) {
	p, err := decodeRecord(key, rec, k)
	if err == nil && len(p) != 8 {
		err = fmt.Errorf("%w: payload %d bytes, want 8", errBadRecord, len(p))
	}
	if err != nil {
		return 0, corruptMeta(key, err)
	}
	return binary.BigEndian.Uint64(p), nil
}

func encodeApplied(applied uint64, snapshot []byte) []byte {
	return encodeSnapshotRecord(keyApplied, kindApplied, applied, snapshot)
}

func encodeSnapshotRecord(key []byte, k recordKind, index uint64, snapshot []byte) []byte {
	p := make([]byte, 12+len(snapshot))
	binary.BigEndian.PutUint64(p, index)
	binary.BigEndian.PutUint32(p[8:], uint32(len(snapshot)))
	copy(p[12:], snapshot)
	return encodeRecord(key, k, p)
}

func decodeApplied(rec []byte) (uint64, []byte, error) {
	return decodeSnapshotRecord(keyApplied, kindApplied, rec)
}

func decodeSnapshotRecord(key []byte, kind recordKind, rec []byte) (uint64, []byte, error) {
	p, err := decodeRecord(key, rec, kind)
	if err == nil && len(p) < 12 {
		err = fmt.Errorf("%w: applied payload %d bytes", errBadRecord, len(p))
	}
	if err == nil {
		if n := binary.BigEndian.Uint32(p[8:]); uint64(n) != uint64(len(p)-12) {
			err = fmt.Errorf("%w: snapshot length %d, record holds %d", errBadRecord, n, len(p)-12)
		}
	}
	if err != nil {
		return 0, nil, corruptMeta(key, err)
	}
	return binary.BigEndian.Uint64(p), append([]byte{}, p[12:]...), nil
}

func corruptMeta(key []byte, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrCorrupt, key, err)
}

// maxValueLen bounds values and snapshots so lengths fit the u32 fields.
const maxValueLen = math.MaxUint32 - 64

// encodeRef is the Badger value standing for an accepted record of n
// bytes kept at off in segment seg.
func encodeRef(key []byte, seg, off uint64, n int) []byte {
	p := make([]byte, 20)
	binary.BigEndian.PutUint64(p, seg)
	binary.BigEndian.PutUint64(p[8:], off)
	binary.BigEndian.PutUint32(p[16:], uint32(n))
	return encodeRecord(key, kindRef, p)
}

// isRef reports whether rec is framed as a reference (checked fully by
// decodeRef).
func isRef(rec []byte) bool { return len(rec) >= recordHeader && recordKind(rec[1]) == kindRef }

func decodeRef(index uint64, rec []byte) (seg, off uint64, n int, err error) {
	p, err := decodeRecord(acceptedKey(index), rec, kindRef)
	if err == nil && len(p) != 20 {
		err = fmt.Errorf("%w: reference payload %d bytes", errBadRecord, len(p))
	}
	if err != nil {
		return 0, 0, 0, fmt.Errorf("%w: instance %d: %w", ErrCorrupt, index, err)
	}
	return binary.BigEndian.Uint64(p), binary.BigEndian.Uint64(p[8:]), int(binary.BigEndian.Uint32(p[16:])), nil
}

func encodeSegPos(p segPos) []byte {
	b := binary.BigEndian.AppendUint64(nil, p.seg)
	return encodeRecord(keySegPos, kindSegPos, binary.BigEndian.AppendUint64(b, p.off))
}

func decodeSegPos(rec []byte) (segPos, error) {
	p, err := decodeRecord(keySegPos, rec, kindSegPos)
	if err == nil && len(p) != 16 {
		err = fmt.Errorf("%w: payload %d bytes, want 16", errBadRecord, len(p))
	}
	if err != nil {
		return segPos{}, corruptMeta(keySegPos, err)
	}
	return segPos{binary.BigEndian.Uint64(p), binary.BigEndian.Uint64(p[8:])}, nil
}

func crc32Castagnoli(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }
