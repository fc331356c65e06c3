package binlog

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// event builds a binlog event of type typ with body, its header's
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

// FuzzSplitAgree: for any bytes, CountEvents, SplitEvents and SplitTxns agree
// on whether they frame; framed, the events (and the transactions' events)
// put back together are b, in order, and NextEvent walks the same events
// SplitEvents returns.
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
		n, cerr := CountEvents(b)
		evs, serr := SplitEvents(b)
		if (cerr == nil) != (serr == nil) {
			t.Fatalf("CountEvents err %v, SplitEvents err %v", cerr, serr)
		}
		txns, terr := SplitTxns(b)
		if cerr != nil {
			if terr == nil {
				t.Fatalf("SplitTxns framed what CountEvents refused (%v)", cerr)
			}
			return
		}
		if len(evs) != n {
			t.Fatalf("CountEvents %d, SplitEvents %d", n, len(evs))
		}
		i := 0
		for ev, rest := NextEvent(b); ev != nil; ev, rest = NextEvent(rest) {
			if i >= len(evs) || !bytes.Equal(ev, evs[i]) {
				t.Fatalf("NextEvent's event %d differs from SplitEvents'", i)
			}
			i++
		}
		if i != n || !bytes.Equal(bytes.Join(evs, nil), b) {
			t.Fatalf("%d events walked of %d; joined equal: %v", i, n, bytes.Equal(bytes.Join(evs, nil), b))
		}
		if terr != nil {
			return // framed, but not transactions (no GTID first, a bad GTID event)
		}
		var joined []byte
		for _, tx := range txns {
			if tx.Events[4] != EventMariaGTID {
				t.Fatalf("transaction %v does not start with its GTID event", tx.GTID)
			}
			joined = append(joined, tx.Events...)
		}
		if !bytes.Equal(joined, b) {
			t.Fatal("transactions' events joined differ from b")
		}
	})
}
