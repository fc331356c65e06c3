package binlog

import "testing"

func TestParseGTIDList(t *testing.T) {
	l, err := ParseGTIDList(" 1-2-9, 0-1-5 ,")
	if err != nil || l.String() != "0-1-5,1-2-9" {
		t.Fatalf("%v %v", l, err)
	}
	if g, ok := l.Domain(1); !ok || g.Seq != 9 {
		t.Fatal(g, ok)
	}
	for _, bad := range []string{"1-2", "a-b-c", "0-1-5,0-1-6", "1-2-3-4", "-1-2-3"} {
		if _, err := ParseGTIDList(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if g, err := ParseGTID(""); err != nil || !g.IsZero() || g.String() != "" {
		t.Fatal(g, err)
	}
}

func TestSplitEvents(t *testing.T) {
	ev := func(n int) []byte {
		b := make([]byte, n)
		b[9] = byte(n)
		return b
	}
	all := append(ev(20), ev(30)...)
	got, err := SplitEvents(all)
	if err != nil || len(got) != 2 || len(got[1]) != 30 {
		t.Fatal(len(got), err)
	}
	if _, err := SplitEvents(all[:40]); err == nil {
		t.Fatal("truncated accepted")
	}
	if _, err := SplitEvents(make([]byte, 19)); err == nil {
		t.Fatal("zero size accepted")
	}
}

func FuzzSplitEvents(f *testing.F) {
	f.Add([]byte{})
	f.Add(make([]byte, 19))
	f.Fuzz(func(t *testing.T, b []byte) {
		evs, err := SplitEvents(b)
		if err != nil {
			return
		}
		n := 0
		for _, e := range evs {
			if len(e) < HeaderLen {
				t.Fatal("short event returned")
			}
			n += len(e)
		}
		if n != len(b) {
			t.Fatal("lost bytes")
		}
	})
}

func gtidEvent(server uint32, seq uint64) []byte {
	ev := make([]byte, HeaderLen+13+4)
	ev[4] = EventMariaGTID
	ev[5] = byte(server)
	ev[9] = byte(len(ev))
	ev[HeaderLen] = byte(seq)
	return ev
}

func TestSplitTxns(t *testing.T) {
	other := make([]byte, 25)
	other[4], other[9] = 16, 25
	var b []byte
	b = append(b, gtidEvent(1, 5)...)
	b = append(b, other...)
	b = append(b, gtidEvent(2, 6)...)
	b = append(b, other...)
	b = append(b, other...)
	txns, err := SplitTxns(b)
	if err != nil || len(txns) != 2 {
		t.Fatal(txns, err)
	}
	if txns[0].GTID != (GTID{Server: 1, Seq: 5}) || len(txns[0].Events) != 36+25 || len(txns[1].Events) != 36+50 {
		t.Fatalf("%+v", txns)
	}
	if _, err := SplitTxns(other); err == nil {
		t.Fatal("events before a GTID event accepted")
	}
}
