package wal

import "encoding/binary"

// Key layout (all integers big-endian, so byte order is numeric order):
//
//	'a' | bucket(8) | index(8)   accepted record of one instance; bucket = index >> bucketShift
//	'm' | name                   one metadata record per name below
//
// The bucket field lets TruncateBelow drop whole buckets with one
// DropPrefix each instead of one tombstone per instance.
const (
	prefixAccepted = 'a'
	prefixMeta     = 'm'

	// bucketShift: 4096 instances per bucket.
	bucketShift    = 12
	acceptedKeyLen = 1 + 8 + 8
)

var (
	keyFormat   = []byte("m/format")
	keyPromised = []byte("m/promised")
	keyChosen   = []byte("m/chosen")
	keyApplied  = []byte("m/applied")
	keyFirst    = []byte("m/first")
	keyBase     = []byte("m/base")
	keySegPos   = []byte("m/segpos")
	// keyMembership: the engine saved a membership history next to this
	// log (membership.go); written once, in a frame, never removed.
	keyMembership = []byte("m/membership")
	// prefixSegMax + segment(8): the highest instance a segment holds.
	prefixSegMax = []byte("m/segmax/")
)

func segMaxKey(seg uint64) []byte {
	return binary.BigEndian.AppendUint64(append([]byte{}, prefixSegMax...), seg)
}

func acceptedKey(index uint64) []byte {
	k := make([]byte, acceptedKeyLen)
	k[0] = prefixAccepted
	binary.BigEndian.PutUint64(k[1:], index>>bucketShift)
	binary.BigEndian.PutUint64(k[9:], index)
	return k
}

// bucketPrefix is the key prefix of every instance in bucket b.
func bucketPrefix(b uint64) []byte {
	k := make([]byte, 9)
	k[0] = prefixAccepted
	binary.BigEndian.PutUint64(k[1:], b)
	return k
}

// indexOfKey returns the instance index of an accepted key.
func indexOfKey(k []byte) (uint64, bool) {
	if len(k) != acceptedKeyLen || k[0] != prefixAccepted {
		return 0, false
	}
	idx := binary.BigEndian.Uint64(k[9:])
	if binary.BigEndian.Uint64(k[1:]) != idx>>bucketShift {
		return 0, false
	}
	return idx, true
}
