package node

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/replserver"
	"phxgo/masterlease"
	"phxgo/paxos"
)

// fakeLog is an applied Paxos log in memory: one or more commands per
// index, read in chunks that end at index boundaries, as paxos.Node's.
type fakeLog struct {
	mu    sync.Mutex
	idx   [][][]byte // idx[i] = the commands at index i+1
	grown chan struct{}
}

func newFakeLog() *fakeLog { return &fakeLog{grown: make(chan struct{})} }

func (l *fakeLog) add(cmds ...[]byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.idx = append(l.idx, cmds)
	close(l.grown)
	l.grown = make(chan struct{})
}

func (l *fakeLog) ReadNext(from uint64, maxBytes int) ([]paxos.Command, uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if from == 0 {
		from = 1
	}
	var out []paxos.Command
	size := 0
	i := from
	for ; i <= uint64(len(l.idx)) && (len(out) == 0 || size < maxBytes); i++ {
		for _, c := range l.idx[i-1] {
			out = append(out, paxos.Command{Index: i, Data: c})
			size += len(c)
		}
	}
	return out, i, nil
}

func (l *fakeLog) Base() (uint64, []byte, error) { return 0, nil, nil }

func (l *fakeLog) Applied() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return uint64(len(l.idx))
}

func (l *fakeLog) AppliedCh() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.grown
}

// fakeEvent is a binlog event of n bytes (header included) of type typ.
func fakeEvent(typ byte, n int, fill byte) []byte {
	ev := bytes.Repeat([]byte{fill}, n)
	ev[4] = typ
	binary.LittleEndian.PutUint32(ev[9:], uint32(n))
	return ev
}

// fakeTxn is a transaction of GTID g: a GTID event and rows events.
func fakeTxn(g binlog.GTID, rows ...int) []byte {
	gev := fakeEvent(binlog.EventMariaGTID, binlog.HeaderLen+13+4, 0)
	binary.LittleEndian.PutUint32(gev[5:], g.Server)
	binary.LittleEndian.PutUint64(gev[binlog.HeaderLen:], g.Seq)
	binary.LittleEndian.PutUint32(gev[binlog.HeaderLen+8:], g.Domain)
	out := gev
	for i, n := range rows {
		out = append(out, fakeEvent(23, n, byte('a'+i))...)
	}
	return out
}

func batchCmd(epoch uint64, prev, last binlog.GTID, events []byte, off uint64, more bool) []byte {
	b := masterlease.Batch{Epoch: epoch, Prev: masterlease.GTID(prev), Last: masterlease.GTID(last),
		Events: events, More: more, Continued: off > 0, Offset: off}
	if !more {
		b.TxnCount = 1
	}
	return masterlease.EncodeBatch(b)
}

// fragments cuts events at the given offsets into fragment entries.
func fragments(epoch uint64, prev, last binlog.GTID, events []byte, cuts ...int) [][]byte {
	var out [][]byte
	start := 0
	for _, c := range append(cuts, len(events)) {
		out = append(out, batchCmd(epoch, prev, last, events[start:c], uint64(start), c < len(events)))
		start = c
	}
	return out
}

// TestCursorStreamsSplitTransactions: a split transaction reaches the
// endpoint in pieces of whole events (fragments cut events in the
// middle), only once the log holds all of it; one voided by a term
// change is never shipped, even in part; a replica positioned on a split
// transaction resumes after it.
func TestCursorStreamsSplitTransactions(t *testing.T) {
	g := func(server uint32, seq uint64) binlog.GTID { return binlog.GTID{Server: server, Seq: seq} }
	t1 := fakeTxn(g(1, 1), 100)
	t2 := fakeTxn(g(1, 2), 300, 50, 400, 30) // 812 bytes
	t3 := fakeTxn(g(1, 3), 60)
	t4 := fakeTxn(g(1, 4), 500, 500) // voided
	t4b := fakeTxn(g(2, 4), 70)
	f2 := fragments(1, g(1, 1), g(1, 2), t2, 100, 400, 420) // cuts inside events
	f4 := fragments(1, g(1, 3), g(1, 4), t4, 300, 700)

	lg := newFakeLog()
	lg.add(masterlease.EncodeLeaseRequest(masterlease.LeaseRequest{Candidate: 1}))
	lg.add(batchCmd(1, binlog.GTID{}, g(1, 1), t1, 0, false), f2[0]) // two commands at one index
	lg.add(f2[1])
	lg.add(masterlease.EncodeLeaseRequest(masterlease.LeaseRequest{Candidate: 1, SeenVersion: 1, Renew: true}))

	src := newLogSource(lg)
	src.readSize = 64 // chunks of about one entry: rewinds cross chunk boundaries
	ctx := context.Background()
	cur, err := src.Open(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	next := func(timeout time.Duration) (binlog.Txn, error) {
		c, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		return cur.Next(c)
	}
	if tx, err := next(time.Second); err != nil || !tx.Whole() || !bytes.Equal(tx.Events, t1) {
		t.Fatalf("first: %+v %v", tx, err)
	}
	// Two of t2's four fragments are in the log: nothing of it is shipped.
	if tx, err := next(50 * time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a piece of an incomplete transaction was shipped: %+v %v", tx, err)
	}
	lg.add(f2[2])
	lg.add(f2[3], batchCmd(1, g(1, 2), g(1, 3), t3, 0, false))
	lg.add(f4[0])
	lg.add(f4[1])
	lg.add(masterlease.EncodeLeaseRequest(masterlease.LeaseRequest{Candidate: 2, SeenVersion: 2})) // new term: t4 voided
	lg.add(f4[2])                                                                                  // its last fragment, stale
	lg.add(batchCmd(2, g(1, 3), g(2, 4), t4b, 0, false))

	var joined []byte
	pieces := 0
	for {
		tx, err := next(time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if tx.GTID != g(1, 2) {
			t.Fatalf("got %v while t2 is open", tx.GTID)
		}
		if tx.Offset != uint64(len(joined)) {
			t.Fatalf("piece at %d, want %d", tx.Offset, len(joined))
		}
		if n, err := wholeEvents(tx.Events); err != nil || n != len(tx.Events) || n == 0 {
			t.Fatalf("piece of %d bytes holds %d bytes of whole events (%v)", len(tx.Events), n, err)
		}
		joined = append(joined, tx.Events...)
		pieces++
		if !tx.More {
			break
		}
	}
	if !bytes.Equal(joined, t2) || pieces < 2 {
		t.Fatalf("t2 in %d pieces, %d bytes, want %d", pieces, len(joined), len(t2))
	}
	for _, want := range [][]byte{t3, t4b} {
		tx, err := next(time.Second)
		if err != nil || !tx.Whole() || !bytes.Equal(tx.Events, want) {
			t.Fatalf("got %v (%d bytes) %v, want %d bytes", tx.GTID, len(tx.Events), err, len(want))
		}
	}
	if tx, err := next(50 * time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("after the log's end: %+v %v (a voided piece?)", tx, err)
	}

	// A replica at the split transaction resumes right after it.
	cur, err = src.Open(ctx, binlog.GTIDList{g(1, 2)})
	if err != nil {
		t.Fatal(err)
	}
	if tx, err := next(time.Second); err != nil || tx.GTID != g(1, 3) {
		t.Fatalf("after t2: %v %v", tx.GTID, err)
	}
	// One at the voided transaction's GTID is refused: it is not in the log.
	if _, err := src.Open(ctx, binlog.GTIDList{g(1, 4)}); err == nil {
		t.Fatal("a replica at a voided GTID was accepted")
	}
}

// TestShipCopiesCutEventsOnce: shipping a transaction of 1 MiB events in
// 512 KiB fragments (every event cut, most of them twice) allocates
// little more than the events themselves. Before tailBuf, a cut event was
// copied into a buffer grown by append at every fragment and copied
// again when still incomplete: about four bytes per byte shipped.
func TestShipCopiesCutEventsOnce(t *testing.T) {
	g := binlog.GTID{Server: 1, Seq: 1}
	rows := make([]int, 16)
	for i := range rows {
		rows[i] = 1<<20 + 37
	}
	txn := fakeTxn(g, rows...)
	var frags []masterlease.Batch
	for off := 0; off < len(txn); off += 512 << 10 {
		end := min(off+512<<10, len(txn))
		frags = append(frags, masterlease.Batch{Last: masterlease.GTID(g), Events: txn[off:end], More: end < len(txn), Continued: off > 0})
	}
	c := &logCursor{split: splitState{phase: splitShipping, gtid: g}}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, f := range frags {
		if err := c.ship(f); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	var joined []byte
	for i, p := range c.queue {
		if p.Offset != uint64(len(joined)) || p.More != (i < len(c.queue)-1) {
			t.Fatalf("piece %d at offset %d (more %v), want offset %d", i, p.Offset, p.More, len(joined))
		}
		joined = append(joined, p.Events...)
	}
	if !bytes.Equal(joined, txn) {
		t.Fatalf("shipped %d bytes, not the transaction's %d", len(joined), len(txn))
	}
	// The queue's own growth and the slices' headers are the rest.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(len(txn))*2 {
		t.Errorf("shipping %d bytes allocated %d (%.1f per byte shipped), want at most 2", len(txn), alloc, float64(alloc)/float64(len(txn)))
	} else {
		t.Logf("shipping %d bytes allocated %d (%.2f per byte)", len(txn), alloc, float64(alloc)/float64(len(txn)))
	}
}

// TestOpenInAnotherDomainRefused is the third red-team pass of session
// 37: an outside replica at a GTID of another domain than the log's
// waited forever for it instead of getting error 1236, once the log held
// anything; a position of the log's domain ahead of it still waits.
func TestOpenInAnotherDomainRefused(t *testing.T) {
	g := func(server uint32, seq uint64) binlog.GTID { return binlog.GTID{Server: server, Seq: seq} }
	lg := newFakeLog()
	lg.add(masterlease.EncodeLeaseRequest(masterlease.LeaseRequest{Candidate: 1}))
	lg.add(batchCmd(1, binlog.GTID{}, g(1, 1), fakeTxn(g(1, 1), 40), 0, false))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := newLogSource(lg).Open(ctx, binlog.GTIDList{{Domain: 7, Server: 1, Seq: 1}})
	if !errors.Is(err, replserver.ErrUnknownPosition) || !strings.Contains(err.Error(), "domain 7") {
		t.Fatalf("open in domain 7 of a domain-0 log: %v, want ErrUnknownPosition naming the domain", err)
	}
	ahead, cancelAhead := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelAhead()
	if _, err := newLogSource(lg).Open(ahead, binlog.GTIDList{g(1, 5)}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("open ahead of the log in its own domain: %v, want it to wait", err)
	}
}
