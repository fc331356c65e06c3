package capture

import (
	"bytes"
	"context"
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"

	"phxgo/binlogd/binlog"
)

// TestGroupCommitsBatchWhole: on a real MariaDB whose binlog group
// commits gather four transactions (binlog_commit_wait_count), every
// captured GTID event's commit id is what go-mysql reads, the groups do
// carry one, and no group's first transaction left in a batch of its
// own (pipeline.holding): each Paxos value holds at least two of a
// group's transactions.
func TestGroupCommitsBatchWhole(t *testing.T) {
	m := newMaster(t)
	mustExec(t, m.db, "SET GLOBAL binlog_commit_wait_count=4", "SET GLOBAL binlog_commit_wait_usec=500000")
	t.Cleanup(func() { _, _ = m.db.Exec("SET GLOBAL binlog_commit_wait_count=0") })
	sink := newRecSink()
	cfg := m.config()
	cfg.GroupHold = 5 * time.Second // a slow host must not end a hold here
	_, _, stop := runCapture(t, cfg, sink)
	defer stop()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const clients, perClient = 4, 10
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for w := range clients {
		wg.Go(func() {
			for i := range perClient {
				if _, err := m.db.ExecContext(ctx, "INSERT INTO t.x VALUES (?, 'g')", 5000+w*100+i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	awaitCaughtUp(t, m, sink)

	p := replication.NewBinlogParser()
	p.SetFlavor("mariadb")
	commitOf := func(tx binlog.Txn) uint64 {
		t.Helper()
		n := binary.LittleEndian.Uint32(tx.Events[9:]) // the GTID event comes first
		ev := tx.Events[:n]
		d, err := decodeEvent(ev, true)
		if err != nil || d.gtid != tx.GTID {
			t.Fatalf("%v: GTID event %v, err %v", tx.GTID, d.gtid, err)
		}
		plain := bytes.Clone(ev[:n-4]) // go-mysql, told of no checksum
		binary.LittleEndian.PutUint32(plain[9:], n-4)
		e, err := p.Parse(plain)
		if err != nil {
			t.Fatalf("%v: go-mysql: %v", tx.GTID, err)
		}
		if want := e.Event.(*replication.MariadbGTIDEvent).CommitID; d.commitID != want {
			t.Fatalf("%v: commit id %d, go-mysql %d", tx.GTID, d.commitID, want)
		}
		return d.commitID
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	grouped, lone := 0, 0
	var last uint64
	for seq := uint64(1); seq <= sink.lastSeq; seq++ {
		b := sink.batches[seq]
		for i, tx := range b {
			id := commitOf(tx)
			if id != 0 {
				grouped++
			}
			// A group's first transaction (an id the one before did not
			// have) alone in its batch is what the hold prevents.
			if id != 0 && id != last && i == 0 && len(b) == 1 {
				lone++
			}
			last = id
		}
	}
	if grouped < clients*perClient/2 {
		t.Fatalf("%d of %d transactions in group commits; binlog_commit_wait_count=4 should group most", grouped, clients*perClient)
	}
	if lone > 0 {
		t.Fatalf("%d group commits' first transaction went alone in a batch", lone)
	}
}
