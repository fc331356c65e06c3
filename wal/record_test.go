package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite the seeds in testdata/fuzz (FuzzDecodeRecord, FuzzWalkSegment)")

// corpusSeeds are the committed seeds of FuzzDecodeRecord: valid records
// of every kind and near misses.
func corpusSeeds() map[string]struct {
	index uint64
	rec   []byte
} {
	good := encodeAccepted(Accepted{Index: 7, Ballot: Ballot{Round: 3, Node: 2}, Value: []byte("hello")})
	type seed = struct {
		index uint64
		rec   []byte
	}
	return map[string]seed{
		"accepted":       {7, good},
		"accepted-empty": {1, encodeAccepted(Accepted{Index: 1})},
		"accepted-torn":  {7, good[:len(good)-1]},
		"accepted-wrong": {8, good},
		"promised":       {0, encodeBallot(keyPromised, Ballot{Round: 9, Node: 1})},
		"chosen":         {0, encodeUint(keyChosen, kindChosen, 42)},
		"applied":        {0, encodeApplied(41, []byte("snapshot"))},
		"short":          {0, []byte{recordVersion, byte(kindAccepted), 0, 0}},
		"empty":          {0, nil},
	}
}

// TestCorpus rewrites the seed corpus with -update-corpus and otherwise
// checks it is present.
func TestCorpus(t *testing.T) {
	files := map[string]string{}
	for name, s := range corpusSeeds() {
		files[name] = fmt.Sprintf("go test fuzz v1\nuint64(%d)\n[]byte(%s)\n", s.index, strconv.Quote(string(s.rec)))
	}
	checkCorpus(t, "FuzzDecodeRecord", "TestCorpus", files)
}

// checkCorpus writes fuzz's seed files (name to contents) with
// -update-corpus, and otherwise reports each one missing or stale, naming
// the test that rewrites them.
func checkCorpus(t *testing.T, fuzz, test string, files map[string]string) {
	t.Helper()
	dir := filepath.Join("testdata", "fuzz", fuzz)
	for name, want := range files {
		path := filepath.Join(dir, name)
		if *updateCorpus {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != want {
			t.Errorf("seed %s stale or missing (%v); run go test ./wal -run %s -update-corpus", name, err, test)
		}
	}
}

// withCRC returns rec with its trailer recomputed for key, so the fuzzer
// also reaches the checks behind the checksum.
func withCRC(key, rec []byte) []byte {
	if len(rec) < recordMin {
		return rec
	}
	r := append([]byte{}, rec...)
	body := r[:len(r)-recordTrailer]
	binary.BigEndian.PutUint32(r[len(body):], recordCRC(key, body))
	return r
}

// FuzzDecodeRecord: no input panics; every rejection wraps ErrCorrupt;
// every acceptance re-encodes to the same bytes. Each input is tried as
// is and with a valid checksum.
func FuzzDecodeRecord(f *testing.F) {
	f.Fuzz(func(t *testing.T, index uint64, rec []byte) {
		checkDecoders(t, index, rec, rec, rec, rec)
		checkDecoders(t, index, withCRC(acceptedKey(index), rec), withCRC(keyPromised, rec),
			withCRC(keyChosen, rec), withCRC(keyApplied, rec))
	})
}

func checkDecoders(t *testing.T, index uint64, accRec, ballotRec, chosenRec, appliedRec []byte) {
	{
		rec := accRec
		if a, err := decodeAccepted(index, rec); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decodeAccepted error %v does not wrap ErrCorrupt", err)
			}
		} else if a.Index != index || !bytes.Equal(encodeAccepted(a), rec) {
			t.Fatalf("accepted %+v does not round-trip", a)
		}
	}
	{
		rec := ballotRec
		if b, err := decodeBallot(keyPromised, rec); err == nil && !bytes.Equal(encodeBallot(keyPromised, b), rec) {
			t.Fatalf("ballot %+v does not round-trip", b)
		} else if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatal(err)
		}
	}
	{
		rec := chosenRec
		if v, err := decodeUint(keyChosen, rec, kindChosen); err == nil && !bytes.Equal(encodeUint(keyChosen, kindChosen, v), rec) {
			t.Fatalf("chosen %d does not round-trip", v)
		} else if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatal(err)
		}
	}
	{
		rec := appliedRec
		if v, s, err := decodeApplied(rec); err == nil && !bytes.Equal(encodeApplied(v, s), rec) {
			t.Fatalf("applied %d does not round-trip", v)
		} else if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatal(err)
		}
	}
}

func TestKeys(t *testing.T) {
	for _, i := range []uint64{0, 1, 4095, 4096, 1 << 40, ^uint64(0)} {
		got, ok := indexOfKey(acceptedKey(i))
		if !ok || got != i {
			t.Fatalf("indexOfKey(acceptedKey(%d)) = %d %v", i, got, ok)
		}
		if !bytes.HasPrefix(acceptedKey(i), bucketPrefix(i>>bucketShift)) {
			t.Fatalf("key of %d not under its bucket prefix", i)
		}
	}
	if bytes.Compare(acceptedKey(4095), acceptedKey(4096)) >= 0 || bytes.Compare(acceptedKey(255), acceptedKey(256)) >= 0 {
		t.Fatal("keys do not sort by index")
	}
}

// encodeAccepted writes the value in place; its bytes must stay those of
// the generic framing, or logs written before would no longer decode.
func TestEncodeAcceptedMatchesEncodeRecord(t *testing.T) {
	for _, a := range []Accepted{
		{Index: 1, Ballot: Ballot{Round: 3, Node: 2}},
		{Index: 1 << 40, Ballot: Ballot{Round: 1 << 50, Node: 7}, Value: bytes.Repeat([]byte("x"), 70000)},
	} {
		p := binary.BigEndian.AppendUint64(nil, a.Ballot.Round)
		p = binary.BigEndian.AppendUint32(p, a.Ballot.Node)
		p = binary.BigEndian.AppendUint32(p, uint32(len(a.Value)))
		p = append(p, a.Value...)
		if want := encodeRecord(acceptedKey(a.Index), kindAccepted, p); !bytes.Equal(encodeAccepted(a), want) {
			t.Fatalf("instance %d: encodeAccepted differs from encodeRecord", a.Index)
		}
	}
}
