package capture

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"phxgo/binlogd/binlog"
)

func lastGTID(ctx context.Context, conn *sql.Conn) (binlog.GTID, error) {
	var s string
	if err := conn.QueryRowContext(ctx, "SELECT @@last_gtid").Scan(&s); err != nil {
		return binlog.GTID{}, err
	}
	return binlog.ParseGTID(s)
}

// awaitCaughtUp waits until the sink holds the master's last GTID.
func awaitCaughtUp(t *testing.T, m *master, sink *recSink) {
	t.Helper()
	want := gtidPos(t, m.db)
	await(t, 60*time.Second, "sink to reach "+want.String(), func() bool { return sink.has(want) })
}

// TestCommitWaitsForSink: 16 clients insert; each COMMIT returns only
// after the sink holds its GTID; a blocked sink blocks COMMIT and keeps
// the row invisible; txns arrive whole, in GTID order, exactly once.
func TestCommitWaitsForSink(t *testing.T) {
	m := newMaster(t)
	sink := newRecSink()
	c, _, stop := runCapture(t, m.config(), sink)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const clients, perClient = 16, 40
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := m.db.Conn(ctx)
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close()
			for i := 0; i < perClient; i++ {
				if _, err := conn.ExecContext(ctx, "INSERT INTO t.x VALUES (?, 'v')", w*1000+i); err != nil {
					errs <- err
					return
				}
				g, err := lastGTID(ctx, conn)
				if err != nil {
					errs <- err
					return
				}
				if !sink.has(g) {
					errs <- fmt.Errorf("COMMIT of %v returned before the sink accepted it", g)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// A blocked sink blocks COMMIT, and the row stays invisible.
	gate := make(chan struct{})
	sink.setGate(gate)
	conn, err := m.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	committed := make(chan error, 1)
	go func() {
		_, err := conn.ExecContext(ctx, "INSERT INTO t.x VALUES (999999, 'blocked')")
		committed <- err
	}()
	await(t, 30*time.Second, "the insert to wait for the semi-sync ACK", func() bool {
		var n int
		err := m.db.QueryRow(`SELECT COUNT(*) FROM information_schema.PROCESSLIST
			WHERE STATE LIKE '%semi-sync ACK%' AND INFO LIKE 'INSERT INTO t.x VALUES (999999%'`).Scan(&n)
		return err == nil && n == 1
	})
	var n int
	if err := m.db.QueryRow("SELECT COUNT(*) FROM t.x WHERE id=999999").Scan(&n); err != nil || n != 0 {
		t.Fatalf("blocked commit visible to another session: n=%d err=%v", n, err)
	}
	select {
	case err := <-committed:
		t.Fatalf("COMMIT returned while the sink was blocked: %v", err)
	default:
	}
	close(gate)
	select {
	case err := <-committed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("COMMIT did not return after the sink unblocked")
	}
	if err := m.db.QueryRow("SELECT COUNT(*) FROM t.x WHERE id=999999").Scan(&n); err != nil || n != 1 {
		t.Fatalf("row after unblocking: n=%d err=%v", n, err)
	}

	awaitCaughtUp(t, m, sink)
	txns := sink.snapshot(t)
	checkTxns(t, txns)
	if txns[0].GTID.Seq != 1 || len(txns) != int(gtidPos(t, m.db).Seq) {
		t.Fatalf("got %d txns from %v, want every GTID 1..%v", len(txns), txns[0].GTID, gtidPos(t, m.db))
	}
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after cancel: %v", err)
	}
	st := c.Stats()
	t.Logf("stats: %+v (txns/ACK %.1f, mean ACK latency %v)", st, st.TxnsPerAck(), st.MeanAckLatency())
	if st.Txns != uint64(len(txns)) {
		t.Fatalf("Stats.Txns=%d, sink has %d", st.Txns, len(txns))
	}
}

// TestBatching: with a sink that takes 2 ms per Commit, concurrent
// commits share batches and ACKs. Prints tps and txns per ACK.
func TestBatching(t *testing.T) {
	m := newMaster(t)
	sink := newRecSink()
	sink.delay = 2 * time.Millisecond
	c, _, _ := runCapture(t, m.config(), sink)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const clients = 16
	dur := 3 * time.Second
	if testing.Short() {
		dur = time.Second
	}
	var done atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	errs := make(chan error, clients)
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Since(start) < dur; i++ {
				if _, err := m.db.ExecContext(ctx, "INSERT INTO t.x VALUES (?, 'v')", w*1_000_000+i); err != nil {
					errs <- err
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	awaitCaughtUp(t, m, sink)
	checkTxns(t, sink.snapshot(t))
	st := c.Stats()
	t.Logf("FIGURE: %d clients, sink 2 ms/Commit, MaxInFlight %d: %.0f tps, %.1f txns/ACK, %.1f txns/batch (max %d), mean ACK latency %v",
		clients, m.config().MaxInFlight, float64(done.Load())/elapsed.Seconds(), st.TxnsPerAck(),
		float64(st.Txns)/float64(st.Batches), st.MaxBatchTxns, st.MeanAckLatency())
	if st.MaxBatchTxns < 2 {
		t.Fatalf("no batch held more than one transaction under %d concurrent clients: %+v", clients, st)
	}
}

// TestReconnect: the capture connection is KILLed mid-stream; capture
// resumes from its durable GTID with no duplicate and no gap.
func TestReconnect(t *testing.T) {
	m := newMaster(t)
	sink := newRecSink()
	sink.delay = time.Millisecond
	c, _, _ := runCapture(t, m.config(), sink)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var stopW atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stopW.Load(); i++ {
				if _, err := m.db.ExecContext(ctx, "INSERT INTO t.x VALUES (?, 'v')", w*1_000_000+i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for k := 0; k < 3; k++ {
		before := sink.count()
		await(t, 30*time.Second, "progress before kill", func() bool { return sink.count() > before+20 })
		var id int64
		if err := m.db.QueryRow("SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'").Scan(&id); err != nil {
			t.Fatal(err)
		}
		mustExec(t, m.db, fmt.Sprintf("KILL CONNECTION %d", id))
		await(t, 30*time.Second, "reconnect", func() bool { return c.Stats().Reconnects > uint64(k) })
	}
	before := sink.count()
	await(t, 30*time.Second, "progress after the last reconnect", func() bool { return sink.count() > before+20 })
	stopW.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	awaitCaughtUp(t, m, sink)
	txns := sink.snapshot(t)
	checkTxns(t, txns) // contiguous GTIDs: no gap, no duplicate
	st := c.Stats()
	t.Logf("%d txns, %d reconnects, %d re-deliveries dropped", len(txns), st.Reconnects, st.Duplicates)
}

// TestCheckServerRefuses: every wrong setting is named.
func TestCheckServerRefuses(t *testing.T) {
	m := newMaster(t)
	mustExec(t, m.db, "SET GLOBAL rpl_semi_sync_master_enabled=OFF", "SET GLOBAL sync_binlog=0",
		"SET GLOBAL rpl_semi_sync_master_wait_point=AFTER_COMMIT", "SET GLOBAL rpl_semi_sync_master_timeout=10000")
	conn, err := m.db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "SET SESSION gtid_domain_id=5; INSERT INTO t.x VALUES (1, 'other domain')"); err != nil {
		t.Fatal(err)
	}
	err = Run(context.Background(), m.config(), newRecSink())
	if !errors.Is(err, ErrBadSettings) {
		t.Fatalf("Run: %v", err)
	}
	for _, name := range []string{"sync_binlog=0", "rpl_semi_sync_master_enabled=OFF", "rpl_semi_sync_master_wait_point=AFTER_COMMIT",
		"rpl_semi_sync_master_timeout=10000", "gtid_binlog_pos"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error does not name %s: %v", name, err)
		}
	}
	t.Log(err)
}

// awaitUnsafe waits for Run to stop with ErrUnsafe after what happened.
func awaitUnsafe(t *testing.T, done <-chan struct{}, stop func() error, what string) {
	t.Helper()
	select {
	case <-done:
		if err := stop(); !errors.Is(err, ErrUnsafe) {
			t.Fatalf("Run: %v", err)
		}
		t.Log(stop())
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not notice " + what)
	}
}

// TestUnsafeWhenSemiSyncTurnedOff: semi-sync disabled underneath a
// running capture is ErrUnsafe.
func TestUnsafeWhenSemiSyncTurnedOff(t *testing.T) {
	m := newMaster(t)
	sink := newRecSink()
	_, done, stop := runCapture(t, m.config(), sink)
	mustExec(t, m.db, "INSERT INTO t.x VALUES (1, 'a')")
	mustExec(t, m.db, "SET GLOBAL rpl_semi_sync_master_enabled=OFF")
	awaitUnsafe(t, done, stop, "semi-sync turned off")
}

// TestUnsafeWhenWaitingCommitKilled: a session killed while waiting for
// the ACK commits without it (Rpl_semi_sync_master_no_tx grows).
func TestUnsafeWhenWaitingCommitKilled(t *testing.T) {
	m := newMaster(t)
	sink := newRecSink()
	_, done, stop := runCapture(t, m.config(), sink)
	mustExec(t, m.db, "INSERT INTO t.x VALUES (6, 'a')") // capture is streaming
	gate := make(chan struct{})
	defer close(gate)
	sink.setGate(gate)
	go func() { _, _ = m.db.Exec("INSERT INTO t.x VALUES (7, 'a')") }()
	var id int64
	await(t, 30*time.Second, "the insert to wait for the ACK", func() bool {
		return m.db.QueryRow(`SELECT ID FROM information_schema.PROCESSLIST WHERE STATE LIKE '%semi-sync ACK%'`).Scan(&id) == nil
	})
	mustExec(t, m.db, fmt.Sprintf("KILL %d", id))
	awaitUnsafe(t, done, stop, "a commit without ACK")
}

// TestSinkErrorIsFatal: a rejected batch stops capture with ErrRejected.
//
// Two batches are in flight when the first fails: one transaction of
// three 256 KiB rows, cut into pieces of 128 KiB, and the sink holds
// every outcome until two are proposed. Run still reports the first
// one's error, not the second's "follows a batch that is not durable"
// (in CI the drain's error once replaced the cause).
func TestSinkErrorIsFatal(t *testing.T) {
	m := newMaster(t)
	sink := newRecSink()
	cfg := m.config()
	cfg.FragmentBytes, cfg.BatchMaxBytes = 128<<10, 128<<10
	_, done, stop := runCapture(t, cfg, sink)
	awaitCaughtUp(t, m, sink)
	reject := errors.New("batch invalid: stale epoch")
	gate := make(chan struct{})
	sink.mu.Lock()
	sink.fail, sink.gate = reject, gate
	before := sink.lastSeq
	sink.mu.Unlock()
	go func() {
		_, _ = m.db.Exec("INSERT INTO t.x VALUES (7, REPEAT('a', 262144)), (8, REPEAT('b', 262144)), (9, REPEAT('c', 262144))")
	}()
	await(t, 30*time.Second, "two batches in flight", func() bool {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		return sink.lastSeq >= before+2
	})
	close(gate)
	select {
	case <-done:
		if err := stop(); !errors.Is(err, ErrRejected) || !errors.Is(err, reject) {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not stop on a sink error")
	}
}

// TestBigTxnAndDDL: a 20 MB transaction (packets over 16 MB) and DDL
// arrive whole.
func TestBigTxnAndDDL(t *testing.T) {
	m := newMaster(t)
	sink := newRecSink()
	_, _, _ = runCapture(t, m.config(), sink)
	big := strings.Repeat("x", 20<<20)
	if _, err := m.db.Exec("INSERT INTO t.x VALUES (1, ?)", big); err != nil {
		t.Fatal(err)
	}
	conn, err := m.db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{"ALTER TABLE t.x ADD COLUMN w INT", "CREATE TABLE t.y (a INT PRIMARY KEY)",
		"BEGIN", "INSERT INTO t.y VALUES (1),(2),(3)", "UPDATE t.x SET w=1", "COMMIT", "DROP TABLE t.y"} {
		if _, err := conn.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	awaitCaughtUp(t, m, sink)
	txns := sink.snapshot(t)
	checkTxns(t, txns)
	var sawBig bool
	ddl := 0
	for _, tx := range txns {
		evs, _ := binlog.SplitEvents(tx.Events)
		if len(tx.Events) > 20<<20 {
			sawBig = true
		}
		if len(evs) == 2 && evs[1][4] == 2 { // GTID + one QUERY: a standalone DDL
			ddl++
		}
	}
	if !sawBig || ddl < 5 { // CREATE DATABASE, CREATE t.x, ALTER, CREATE t.y, DROP
		t.Fatalf("big txn seen=%v, standalone DDL txns=%d (want >= 5)", sawBig, ddl)
	}
}

// TestReconnectAcksDurable: a transaction that becomes durable while the
// connection is down is not re-sent after the reconnect; its COMMIT must
// still be released.
func TestReconnectAcksDurable(t *testing.T) {
	m := newMaster(t)
	sink := newRecSink()
	c, _, _ := runCapture(t, m.config(), sink)
	mustExec(t, m.db, "INSERT INTO t.x VALUES (1, 'a')") // streaming
	gate := make(chan struct{})
	sink.setGate(gate)
	committed := make(chan error, 1)
	go func() {
		_, err := m.db.Exec("INSERT INTO t.x VALUES (2, 'b')")
		committed <- err
	}()
	await(t, 30*time.Second, "the insert to wait for the ACK", func() bool {
		var n int
		return m.db.QueryRow(`SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE LIKE '%semi-sync ACK%'`).Scan(&n) == nil && n == 1
	})
	var id int64
	if err := m.db.QueryRow("SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'").Scan(&id); err != nil {
		t.Fatal(err)
	}
	mustExec(t, m.db, fmt.Sprintf("KILL CONNECTION %d", id))
	sink.setGate(nil)
	close(gate) // the batch becomes durable while the stream is down
	select {
	case err := <-committed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("COMMIT of a durable transaction stayed blocked after the reconnect: %+v", c.Stats())
	}
	if c.Stats().Reconnects == 0 {
		t.Fatal("no reconnect happened")
	}
}
