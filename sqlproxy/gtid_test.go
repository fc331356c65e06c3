package sqlproxy

import "testing"

func TestGTIDPos(t *testing.T) {
	p, err := parseGTIDPos("0-1-42,\n 1-2-7")
	if err != nil || p.String() != "0-1-42,1-2-7" {
		t.Fatalf("parse: %v %v", p, err)
	}
	want, _ := parseGTIDPos("0-3-40")
	if !p.covers(want) || p.behind(want) != 0 {
		t.Fatal("0-1-42 covers 0-3-40 (sequence numbers order a domain)")
	}
	want, _ = parseGTIDPos("0-1-45,2-1-1")
	if p.covers(want) || p.behind(want) != 4 {
		t.Fatalf("behind %d", p.behind(want))
	}
	if p.add(gtid{0, 1, 41}) || !p.add(gtid{0, 3, 43}) || p.String() != "0-3-43,1-2-7" {
		t.Fatalf("add: %v", p)
	}
	empty, _ := parseGTIDPos("")
	if !empty.covers(gtidPos{}) || empty.covers(p) {
		t.Fatal("empty position")
	}
	for _, bad := range []string{"0-1", "a-b-c", "0-1-2-3"} {
		if _, err := parseGTIDPos(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
