package wal

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// put writes raw bytes under key straight through Badger, bypassing the
// record encoder, the way a torn or rotten disk block would look.
func put(t *testing.T, l *Log, key, value []byte) {
	t.Helper()
	if err := l.db.Update(func(txn *badger.Txn) error { return txn.Set(key, value) }); err != nil {
		t.Fatal(err)
	}
}

func wantCorrupt(t *testing.T, err error, name string) {
	t.Helper()
	wantErr(t, err, ErrCorrupt)
	if !strings.Contains(err.Error(), name) {
		t.Fatalf("err = %v, want it to name %q", err, name)
	}
}

func TestCorruptAccepted(t *testing.T) {
	good := encodeAccepted(acc(5, 2))
	reversion := func() []byte { // valid CRC, unknown version
		r := append([]byte{}, good...)
		r[0] = 2
		body := r[:len(r)-recordTrailer]
		binary.BigEndian.PutUint32(r[len(body):], recordCRC(acceptedKey(5), body))
		return r
	}
	lying := func() []byte { // valid CRC, value length field disagrees
		p := make([]byte, 16+3)
		binary.BigEndian.PutUint32(p[12:], 9)
		return encodeRecord(acceptedKey(5), kindAccepted, p)
	}
	for name, bad := range map[string][]byte{
		"garbage":     []byte("not a record at all"),
		"empty":       {},
		"torn":        good[:len(good)-3],
		"bitflip":     append(append([]byte{}, good[:9]...), append([]byte{good[9] ^ 0x10}, good[10:]...)...),
		"other key":   encodeAccepted(acc(6, 2)),
		"version":     reversion(),
		"wrong kind":  encodeRecord(acceptedKey(5), kindChosen, make([]byte, 8)),
		"length lies": lying(),
	} {
		t.Run(name, func(t *testing.T) {
			l := openTest(t, t.TempDir(), applyAtOnce())
			var as []Accepted
			for i := uint64(1); i <= 10; i++ {
				as = append(as, acc(i, 2))
			}
			mustSave(t, l, Update{Accepted: as})
			put(t, l, acceptedKey(5), bad)

			_, ok, err := l.Get(5)
			wantCorrupt(t, err, "instance 5")
			if ok {
				t.Fatal("Get reported ok with a corrupt record")
			}
			rs, err := l.Range(1, 10, 0)
			wantCorrupt(t, err, "instance 5")
			if rs != nil {
				t.Fatalf("Range returned %d records with the error", len(rs))
			}
			// Neighbours are still readable.
			if a, ok, err := l.Get(4); err != nil || !ok || !equalAccepted(a, acc(4, 2)) {
				t.Fatalf("Get(4) = %+v %v %v", a, ok, err)
			}
			if rs, err := l.Range(6, 10, 0); err != nil || len(rs) != 5 {
				t.Fatalf("Range(6,10) = %d %v", len(rs), err)
			}
		})
	}
}

// TestCorruptHardState: a corrupt metadata record makes Open fail, naming
// the record; HardState is never built from it.
func TestCorruptHardState(t *testing.T) {
	for _, key := range [][]byte{keyPromised, keyChosen, keyApplied, keyFirst, keyFormat} {
		t.Run(string(key), func(t *testing.T) {
			dir := t.TempDir()
			l, err := Open(dir, applyAtOnce())
			if err != nil {
				t.Fatal(err)
			}
			p := Ballot{Round: 1}
			mustSave(t, l, Update{Promised: &p, Chosen: 1, Accepted: []Accepted{acc(1, 1)}})
			if err := l.SaveApplied(1, []byte("s")); err != nil {
				t.Fatal(err)
			}
			put(t, l, key, []byte{recordVersion, 0xff, 1, 2, 3, 4, 5})
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			_, err = Open(dir, quietOptions())
			wantCorrupt(t, err, string(key))
		})
	}
}

func TestCorruptInvariant(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	mustSave(t, l, Update{Chosen: 3})
	put(t, l, keyApplied, encodeApplied(9, nil)) // applied above chosen
	l.Close()
	_, err = Open(dir, quietOptions())
	wantCorrupt(t, err, "applied 9 above chosen 3")
}
