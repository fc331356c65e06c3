package capture

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"strings"
	"testing"
	"time"

	"phxgo/binlogd/binlog"
)

// goldenUnits feeds the golden binlog through g and returns what it cut.
func goldenUnits(t *testing.T, g *grouper) []*unit {
	t.Helper()
	file, err := os.ReadFile("testdata/binlog.000001")
	if err != nil {
		t.Fatal(err)
	}
	var out []*unit
	for i, p := range splitFuzzPackets(goldenStream(t, file, true)) {
		ev, ack, err := parseDumpPacket(p)
		if err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
		u, err := g.feed(ev, ack)
		if err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
		if u != nil {
			out = append(out, u)
		}
	}
	return out
}

// TestGrouperPieces: with a fragment size of one byte every event that
// does not end its transaction leaves at once as a piece; the pieces of
// each transaction, joined, are exactly its whole events, at increasing
// offsets, and only the last carries the ACK request.
func TestGrouperPieces(t *testing.T) {
	whole := goldenUnits(t, newGrouper())
	g := newGrouper()
	g.fragBytes = 1
	pieces := goldenUnits(t, g)
	var joined []*unit
	var cur *unit
	for _, u := range pieces {
		if u.txn.Offset == 0 {
			cur = &unit{txn: binlog.Txn{GTID: u.txn.GTID}}
		}
		if cur == nil || u.txn.GTID != cur.txn.GTID || u.txn.Offset != uint64(len(cur.txn.Events)) {
			t.Fatalf("piece %v at %d does not continue %v", u.txn.GTID, u.txn.Offset, cur)
		}
		if u.needAck && u.txn.More {
			t.Fatalf("ACK request on a piece of %v that is not its last", u.txn.GTID)
		}
		cur.txn.Events = append(cur.txn.Events, u.txn.Events...)
		if !u.txn.More {
			cur.end, cur.needAck = u.end, u.needAck
			joined = append(joined, cur)
			cur = nil
		}
	}
	if len(pieces) <= len(whole) || len(joined) != len(whole) {
		t.Fatalf("%d pieces joined into %d transactions, want %d", len(pieces), len(joined), len(whole))
	}
	for i := range whole {
		if !bytes.Equal(joined[i].txn.Events, whole[i].txn.Events) || joined[i].end != whole[i].end || !joined[i].needAck {
			t.Fatalf("transaction %v differs when cut into pieces", whole[i].txn.GTID)
		}
	}
}

// TestGrouperResume: after a reconnect the master re-sends a split
// transaction from its GTID event; the grouper drops the durable prefix
// once its CRC32 matches and goes on at the next offset. Other bytes
// than those made durable, or a prefix that does not end at an event
// boundary, stop the stream.
func TestGrouperResume(t *testing.T) {
	g := newGrouper()
	g.fragBytes = 1
	pieces := goldenUnits(t, g)
	// The first transaction with at least three pieces.
	var first []*unit
	for i := 0; i+2 < len(pieces); i++ {
		if pieces[i].txn.Offset == 0 && pieces[i+1].txn.More {
			first = pieces[i : i+3]
			break
		}
	}
	if first == nil {
		t.Fatal("no transaction of three events in the golden binlog")
	}
	gtid := first[0].txn.GTID
	prefix := append(append([]byte(nil), first[0].txn.Events...), first[1].txn.Events...)
	rp := resumePoint{gtid: gtid, bytes: uint64(len(prefix)), crc: crc32.ChecksumIEEE(prefix)}

	g = newGrouper()
	g.fragBytes = 1
	g.resume = &rp
	got := goldenUnits(t, g)
	for _, u := range got {
		if u.txn.GTID == gtid {
			if u.txn.Offset != rp.bytes || !bytes.Equal(u.txn.Events, first[2].txn.Events) {
				t.Fatalf("resumed %v at offset %d, want %d", gtid, u.txn.Offset, rp.bytes)
			}
			break
		}
	}
	if g.resume != nil {
		t.Fatal("resume point not consumed")
	}

	for name, bad := range map[string]resumePoint{
		"other bytes":         {gtid: gtid, bytes: rp.bytes, crc: rp.crc + 1},
		"not at an event end": {gtid: gtid, bytes: rp.bytes - 1, crc: rp.crc},
	} {
		g = newGrouper()
		g.resume = &bad
		err := feedGolden(t, g)
		if !errors.Is(err, ErrProtocol) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func feedGolden(t *testing.T, g *grouper) error {
	file, err := os.ReadFile("testdata/binlog.000001")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range splitFuzzPackets(goldenStream(t, file, true)) {
		ev, ack, _ := parseDumpPacket(p)
		if _, err := g.feed(ev, ack); err != nil {
			return err
		}
	}
	return nil
}

// TestPipelinePiecesTravelAlone: a split transaction's pieces are
// batches of their own, proposed in order with Prev the last whole
// transaction; durable moves to it only with its last piece, and the
// transactions around it keep batching.
func TestPipelinePiecesTravelAlone(t *testing.T) {
	sink := newRecSink()
	c, units, stop := startPipeline(t, sink, 4)
	piece := func(seq uint64, off, n int, more bool) *unit {
		return &unit{txn: binlog.Txn{GTID: binlog.GTID{Server: 1, Seq: seq}, Events: make([]byte, n), More: more, Offset: uint64(off)},
			end: Position{File: "b.000001", Pos: 1000 + seq}}
	}
	gate := make(chan struct{})
	sink.setGate(gate)
	units <- txnUnit(1)
	units <- txnUnit(2)
	units <- piece(3, 0, 300, true)
	units <- piece(3, 300, 300, true)
	units <- piece(3, 600, 50, false)
	units <- txnUnit(4)
	await(t, 5*time.Second, "batches to be proposed", func() bool {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		return sink.lastSeq >= 4
	})
	if d := c.Stats().Durable; !d.IsZero() {
		t.Fatalf("durable %v before any batch finished", d)
	}
	close(gate)
	await(t, 5*time.Second, "durable 4", func() bool { return c.Stats().Durable.Seq == 4 })
	if rerr, derr := stop(); !errors.Is(rerr, context.Canceled) || derr != nil {
		t.Fatalf("run: %v, drain: %v", rerr, derr)
	}
	txns := sink.snapshot(t)
	if len(txns) != 4 || len(txns[2].Events) != 650 || sink.misorder != 0 {
		t.Fatalf("%d txns (third %d bytes), %d misordered proposals", len(txns), len(txns[2].Events), sink.misorder)
	}
	if st := c.Stats(); st.Pieces != 3 || st.Txns != 4 {
		t.Fatalf("stats %+v", st)
	}
	// A piece that does not continue the open transaction is a protocol error.
	p := &pipeline{c: c}
	c.open = openTxn{gtid: binlog.GTID{Server: 1, Seq: 9}, next: 100}
	if err := p.accept(piece(9, 50, 10, true)); !errors.Is(err, ErrProtocol) {
		t.Fatalf("piece at the wrong offset: %v", err)
	}
	if err := p.accept(txnUnit(10)); !errors.Is(err, ErrProtocol) {
		t.Fatalf("new transaction while one is open: %v", err)
	}
}

// TestSplitTransactionStreams: a transaction much bigger than
// FragmentBytes reaches the sink in pieces while capture holds only
// about BufferBytes; its COMMIT returns only after the last piece is
// durable. The dump connection is killed in the middle: capture resumes
// the transaction after its durable prefix, and the sink gets it whole,
// exactly once.
func TestSplitTransactionStreams(t *testing.T) {
	m := newMaster(t)
	sink := newRecSink()
	sink.delay = 5 * time.Millisecond
	cfg := m.config()
	cfg.FragmentBytes, cfg.BatchMaxBytes, cfg.BufferBytes = 256<<10, 256<<10, 512<<10
	c, _, _ := runCapture(t, cfg, sink)
	const rows, rowBytes = 64, 128 << 10 // 8 MiB in 64 row events
	conn, err := m.db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	mustExec(t, m.db, "CREATE TABLE t.big (id INT PRIMARY KEY, v LONGBLOB)")
	if _, err := conn.ExecContext(context.Background(), "BEGIN"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < rows; i++ {
		if _, err := conn.ExecContext(context.Background(), "INSERT INTO t.big VALUES (?, ?)", i, strings.Repeat(fmt.Sprint(i%10), rowBytes)); err != nil {
			t.Fatal(err)
		}
	}
	committed := make(chan error, 1)
	go func() {
		_, err := conn.ExecContext(context.Background(), "COMMIT")
		committed <- err
	}()
	await(t, time.Minute, "some pieces durable", func() bool { return c.Stats().Pieces >= 4 })
	select {
	case err := <-committed:
		t.Fatalf("COMMIT returned (%v) before the last piece was durable", err)
	default:
	}
	var id int64
	if err := m.db.QueryRow("SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'").Scan(&id); err != nil {
		t.Fatal(err)
	}
	mustExec(t, m.db, fmt.Sprintf("KILL CONNECTION %d", id))
	select {
	case err := <-committed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("COMMIT did not return")
	}
	awaitCaughtUp(t, m, sink)
	txns := sink.snapshot(t)
	checkTxns(t, txns)
	big := txns[len(txns)-1]
	if len(big.Events) < rows*rowBytes {
		t.Fatalf("last transaction %v has %d bytes, want >= %d", big.GTID, len(big.Events), rows*rowBytes)
	}
	st := c.Stats()
	if st.Resumes == 0 || sink.misorder != 0 {
		t.Fatalf("reconnects %d (resumed a split transaction: %d), misordered proposals %d", st.Reconnects, st.Resumes, sink.misorder)
	}
	if st.PeakBuffered > 2*cfg.BufferBytes {
		t.Fatalf("capture held %d bytes at once, budget %d", st.PeakBuffered, cfg.BufferBytes)
	}
	t.Logf("%d-byte transaction in %d pieces, %d reconnects, peak buffered %d", len(big.Events), st.Pieces, st.Reconnects, st.PeakBuffered)
}
