package binlog

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"reflect"
	"testing"
)

// fuzzEvent builds a binlog event of type typ with body, its header's
// event_size set (the only header field the framing reads).
func fuzzEvent(typ byte, body []byte) []byte {
	ev := make([]byte, HeaderLen, HeaderLen+len(body))
	ev[4] = typ
	binary.LittleEndian.PutUint32(ev[5:], 1) // server id
	ev = append(ev, body...)
	binary.LittleEndian.PutUint32(ev[9:], uint32(len(ev)))
	return ev
}

func fuzzGTIDEvent(seq uint64) []byte {
	body := make([]byte, 13)
	binary.LittleEndian.PutUint64(body, seq)
	return fuzzEvent(EventMariaGTID, body)
}

// refSplitEvents and refSplitTxns are the implementations before
// CountEvents/NextEvent (session 31), kept as the reference.
func refSplitEvents(b []byte) ([][]byte, error) {
	var out [][]byte
	for off := 0; off < len(b); {
		if len(b)-off < HeaderLen {
			return nil, fmt.Errorf("%w: %d trailing bytes at offset %d", ErrBadEvent, len(b)-off, off)
		}
		size := int(binary.LittleEndian.Uint32(b[off+9:]))
		if size < HeaderLen || size > len(b)-off {
			return nil, fmt.Errorf("%w: event_size %d at offset %d of %d", ErrBadEvent, size, off, len(b))
		}
		out = append(out, b[off:off+size])
		off += size
	}
	return out, nil
}

func refSplitTxns(b []byte) ([]Txn, error) {
	evs, err := refSplitEvents(b)
	if err != nil {
		return nil, err
	}
	var out []Txn
	start := 0
	for i, off := 0, 0; i < len(evs); i++ {
		ev := evs[i]
		if ev[4] == EventMariaGTID {
			g, err := GTIDOf(ev)
			if err != nil {
				return nil, err
			}
			if len(out) > 0 {
				out[len(out)-1].Events = b[start:off]
			}
			out = append(out, Txn{GTID: g})
			start = off
		} else if len(out) == 0 {
			return nil, fmt.Errorf("%w: event type %d before the first GTID event", ErrBadEvent, ev[4])
		}
		off += len(ev)
	}
	if len(out) > 0 {
		out[len(out)-1].Events = b[start:]
	}
	return out, nil
}

// FuzzSplitAgree: for any bytes, SplitEvents and SplitTxns give what the
// reference implementations give (the same events and transactions, or
// both an error), CountEvents counts the reference's events, and a
// NextEvent walk, even over bytes CountEvents refused, ends and yields
// the framed prefix's events.
func FuzzSplitAgree(f *testing.F) {
	var two []byte
	for seq := uint64(1); seq <= 2; seq++ {
		two = append(two, fuzzGTIDEvent(seq)...)
		two = append(two, fuzzEvent(2, []byte("BEGIN"))...)
		two = append(two, fuzzEvent(16, make([]byte, 8))...) // XID
	}
	f.Add(two)
	f.Add(two[:len(two)-1])
	f.Add(fuzzEvent(2, []byte("BEGIN"))) // no GTID first
	f.Add([]byte{})
	f.Add(make([]byte, HeaderLen))
	f.Fuzz(func(t *testing.T, b []byte) {
		wantEvs, werr := refSplitEvents(b)
		evs, err := SplitEvents(b)
		if (err == nil) != (werr == nil) || err == nil && (len(evs) != len(wantEvs) || len(evs) > 0 && !reflect.DeepEqual(evs, wantEvs)) {
			t.Fatalf("SplitEvents: %d events, err %v; reference %d, err %v", len(evs), err, len(wantEvs), werr)
		}
		n, cerr := CountEvents(b)
		if (cerr == nil) != (werr == nil) || cerr == nil && n != len(wantEvs) {
			t.Fatalf("CountEvents: %d, err %v; reference %d, err %v", n, cerr, len(wantEvs), werr)
		}
		wantTxns, wterr := refSplitTxns(b)
		txns, terr := SplitTxns(b)
		if (terr == nil) != (wterr == nil) || terr == nil && !reflect.DeepEqual(txns, wantTxns) {
			t.Fatalf("SplitTxns: %+v, err %v; reference %+v, err %v", txns, terr, wantTxns, wterr)
		}
		var walked []byte
		for ev, rest := NextEvent(b); ev != nil; ev, rest = NextEvent(rest) {
			walked = append(walked, ev...)
		}
		if werr == nil && !bytes.Equal(walked, b) {
			t.Fatal("NextEvent's walk over framed bytes is not b")
		}
		if !bytes.HasPrefix(b, walked) {
			t.Fatal("NextEvent's walk is not a prefix of b")
		}
	})
}
