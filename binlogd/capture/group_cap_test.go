package capture

import (
	"testing"

	"phxgo/binlogd/binlog"
)

// TestPieceBufferFitsItsCut: a piece's buffer is sized once. An event
// that takes the piece to FragmentBytes is its last (feed cuts it right
// after), so the buffer holds exactly the piece; a smaller piece keeps
// room for one more event of the same size. Before, a piece of one 1 MiB
// row with 512 KiB fragments held 1.5 MiB until durable.
func TestPieceBufferFitsItsCut(t *testing.T) {
	g := newGrouper()
	g.fragBytes = 512 << 10
	g.cur = &building{gtid: binlog.GTID{Server: 1, Seq: 1}}
	for _, n := range []int{40, 100, 1 << 20} {
		if err := g.take(make([]byte, n)); err != nil {
			t.Fatal(err)
		}
	}
	u, err := g.piece(Position{}, true, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(u.txn.Events) != 1<<20+140 || cap(u.txn.Events) != len(u.txn.Events) {
		t.Fatalf("piece of %d bytes in a buffer of %d, want %d in as many", len(u.txn.Events), cap(u.txn.Events), 1<<20+140)
	}
	if err := g.take(make([]byte, 100<<10)); err != nil {
		t.Fatal(err)
	}
	if got, want := cap(g.cur.buf), g.fragBytes+100<<10; got != want {
		t.Fatalf("a 100 KiB start of a piece got a buffer of %d, want %d (FragmentBytes and one more event)", got, want)
	}
}
