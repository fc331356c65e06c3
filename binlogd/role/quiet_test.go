package role

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/mysqld"
)

// A master MariaDB 10.11 as binlogd runs it (semi-sync AFTER_SYNC,
// wait_no_slave, no timeout) with no semi-sync replica: every commit of the
// application account waits for an ACK that never comes, which is what a
// demoted master's commits do once its capture stopped.
func semiSyncMaster(t *testing.T) (*sql.DB, *sql.DB) {
	return semiSyncMasterWith(t, time.Minute)
}

// semiSyncMasterWith is semiSyncMaster with the statements of fill run
// (within setup) before semi-sync goes on: a write with semi-sync on and
// no replica would wait for an ACK forever.
func semiSyncMasterWith(t *testing.T, setup time.Duration, fill ...string) (*sql.DB, *sql.DB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), setup)
	defer cancel()
	inst, admin := mysqld.NewTestServer(t, 1)
	qs := append([]string{"CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY)", "INSERT INTO app.t VALUES (0)"}, fill...)
	for _, q := range append(qs, "SET GLOBAL rpl_semi_sync_master_enabled=ON", "SET GLOBAL read_only=OFF") {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	app := appDB(t, inst, mysqld.DefaultAccounts())
	app.SetMaxOpenConns(8)
	// The killed server's waiting clients return errors; the test ends.
	t.Cleanup(func() { _ = inst.Kill() })
	return admin, app
}

// logAt is the log as a demoted master's binlogd sees it: it holds the
// server's position at the step-down and nothing after.
func logAt(g binlog.GTID) InLog {
	return func(_ context.Context, h binlog.GTID) (bool, error) { return h == g, nil }
}

func status(t *testing.T, db *sql.DB, name string) int {
	t.Helper()
	n, err := statusInt(context.Background(), db, name)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The facts the step-down relies on, on a real server, and the window that
// makes a count of waiting sessions unfit as a proof: a transaction whose
// statements ran before read_only was asked for commits while the change
// waits (read_only is still off), reaches the binlog, and is not counted as
// waiting while another commit's group holds the semi-sync wait. After the
// change gives up, read_only is off: the server is still writable. Semi-sync
// off would return both commits OK; CheckQuiet and ReleaseSemiSync refuse.
func TestQuietRefusesCommitsInFlight(t *testing.T) {
	ctx := context.Background()
	admin, app := semiSyncMaster(t)
	before, err := BinlogPos(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}

	// A: statements done, commit not yet asked for.
	txA, err := app.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := txA.Exec("INSERT INTO app.t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	// B: an autocommit write that waits for the ACK.
	doneB := make(chan error, 1)
	go func() { _, err := app.Exec("INSERT INTO app.t VALUES (2)"); doneB <- err }()
	await(t, "B waiting for the ACK", func() bool { return status(t, admin, "Rpl_semi_sync_master_wait_sessions") == 1 })

	// read_only on waits for B (it holds the BACKUP COMMIT lock through the
	// semi-sync wait); A's commit passes the check meanwhile.
	roDone := make(chan error, 1)
	go func() {
		_, err := admin.Exec("SET STATEMENT lock_wait_timeout=5 FOR SET GLOBAL read_only=ON")
		roDone <- err
	}()
	await(t, "read_only change waiting", func() bool {
		var n int
		_ = admin.QueryRow("SELECT COUNT(*) FROM information_schema.processlist WHERE info LIKE 'SET STATEMENT lock_wait_timeout=5%' AND state LIKE 'Waiting for backup lock'").Scan(&n)
		return n == 1
	})
	doneA := make(chan error, 1)
	go func() { doneA <- txA.Commit() }()
	await(t, "A in the binlog", func() bool {
		g, err := BinlogPos(ctx, admin)
		return err == nil && g.Seq == before.Seq+2
	})
	if n := status(t, admin, "Rpl_semi_sync_master_wait_sessions"); n != 1 {
		t.Fatalf("wait_sessions %d with A and B both in the binlog and unacknowledged; the count was expected to miss A", n)
	}
	t.Logf("two commits past the log, Rpl_semi_sync_master_wait_sessions=1")
	if err := <-roDone; err == nil {
		t.Fatal("read_only on completed while commits wait for an ACK")
	}
	var ro bool
	if err := admin.QueryRow("SELECT @@GLOBAL.read_only").Scan(&ro); err != nil || ro {
		t.Fatalf("read_only %v (%v): a change that gave up must leave it off", ro, err)
	}

	// What binlogd does now: nothing is provably quiet, semi-sync stays on.
	if err := CheckQuiet(ctx, admin, time.Second, logAt(before)); !errors.Is(err, ErrNotQuiet) {
		t.Fatalf("CheckQuiet: %v, want ErrNotQuiet", err)
	}
	if err := ReleaseSemiSync(ctx, admin, time.Second, logAt(before)); !errors.Is(err, ErrNotQuiet) {
		t.Fatalf("ReleaseSemiSync: %v, want ErrNotQuiet", err)
	}
	bctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := BecomeReplica(bctx, admin, Upstream{Addr: "127.0.0.1:1", User: "x", Password: "y"}); err == nil {
		t.Fatal("BecomeReplica succeeded on a master with commits waiting")
	}
	if on, err := SemiSyncOn(ctx, admin); err != nil || !on {
		t.Fatalf("semi-sync on: %v %v", on, err)
	}
	select {
	case err := <-doneA:
		t.Fatalf("A returned (%v) without an ACK", err)
	case err := <-doneB:
		t.Fatalf("B returned (%v) without an ACK", err)
	case <-time.After(200 * time.Millisecond):
	}
}

// A commit released without an ACK (a client's KILL QUERY: 10.11 answers
// it OK and commits it) leaves nothing waiting, and read_only completes,
// yet the binlog holds a GTID the log lacks: not quiet. Once the log holds
// the position, the release turns semi-sync off and BecomeReplica may go on.
func TestQuietRefusesBinlogAheadOfLog(t *testing.T) {
	ctx := context.Background()
	admin, app := semiSyncMaster(t)
	before, err := BinlogPos(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := app.Exec("INSERT INTO app.t VALUES (3)"); done <- err }()
	await(t, "a commit waiting for the ACK", func() bool { return status(t, admin, "Rpl_semi_sync_master_wait_sessions") == 1 })
	var id int64
	if err := admin.QueryRow("SELECT id FROM information_schema.processlist WHERE info = 'INSERT INTO app.t VALUES (3)'").Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec("KILL QUERY ?", id); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Logf("the killed commit returned %v", err)
	} else {
		t.Logf("the killed commit returned OK without an ACK")
	}
	after, err := BinlogPos(ctx, admin)
	if err != nil || after == before {
		t.Fatalf("binlog at %v (%v), want past %v", after, err, before)
	}
	err = CheckQuiet(ctx, admin, time.Second, logAt(before))
	if !errors.Is(err, ErrNotQuiet) {
		t.Fatalf("CheckQuiet with the binlog at %v and the log at %v: %v, want ErrNotQuiet", after, before, err)
	}
	t.Logf("refused: %v", err)
	if err := ReleaseSemiSync(ctx, admin, time.Second, logAt(before)); !errors.Is(err, ErrNotQuiet) {
		t.Fatalf("ReleaseSemiSync: %v", err)
	}
	if on, _ := SemiSyncOn(ctx, admin); !on {
		t.Fatal("semi-sync went off")
	}
	// The log holds the position (the batch was valid after all): released.
	if err := ReleaseSemiSync(ctx, admin, time.Second, logAt(after)); err != nil {
		t.Fatalf("ReleaseSemiSync with the binlog in the log: %v", err)
	}
	if on, _ := SemiSyncOn(ctx, admin); on {
		t.Fatal("semi-sync still on after the release")
	}
}
