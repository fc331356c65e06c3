package recovery

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/mysqld"
)

func gtidPos(t *testing.T, db *sql.DB) string {
	t.Helper()
	var s string
	if err := db.QueryRow("SELECT @@gtid_binlog_pos").Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// A commit waiting for its semi-sync ACK is prepared in InnoDB and synced in
// the binlog. After kill -9, cutting it from the binlog makes XA recovery
// roll it back: the transaction never happened.
func TestCutPendingCommitRollsBack(t *testing.T) {
	inst, ctx, db := startServer(t, 7, 3*time.Minute)
	before := threeRows(t, db)
	killPendingCommit(ctx, t, inst, db)
	if clean, err := ClosedCleanly(inst.BinlogIndex()); err != nil || clean {
		t.Fatalf("binlog after kill -9: clean=%v err=%v", clean, err)
	}

	groups, err := Scan(inst.BinlogIndex())
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) < 6 { // CREATE DATABASE, CREATE TABLE, 3 inserts, pending
		t.Fatalf("scanned %d groups: %+v", len(groups), groups)
	}
	last := groups[len(groups)-1]
	plan := planCutLast(t, groups)
	if len(plan.Cut) != 1 || plan.Cut[0] != last.GTID || plan.LastKept.String() != before {
		t.Fatalf("plan %v; binlog pos before the pending commit was %s", plan, before)
	}
	// An InnoDB commit is transactional: the cut undoes it, no reseed.
	if !last.Transactional || last.DDL {
		t.Fatalf("pending InnoDB commit scanned as %+v", last)
	}
	if err := NonTransactionalCut(plan); err != nil {
		t.Fatal(err)
	}
	if plan, err = Apply(inst.BinlogIndex(), plan); err != nil {
		t.Fatal(err)
	}
	t.Log(plan)
	// The rewritten index and the truncated file stay the server's (it
	// runs as its own OS user and must rewrite them at the next rotation).
	for _, f := range []string{inst.BinlogIndex(), filepath.Join(inst.DataDir(), plan.File)} {
		if owner(t, f) != owner(t, inst.DataDir()) {
			t.Fatalf("%s owned by uid %d after the cut, datadir by %d", f, owner(t, f), owner(t, inst.DataDir()))
		}
	}

	if err := inst.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cutRolledBack(t, db, before)
	// The cut GTID's sequence number is reused by the next commit: the
	// reason BinlogBatch carries an epoch (DESIGN.md).
	mustExec(t, db, "SET GLOBAL rpl_semi_sync_master_enabled=OFF")
	mustExec(t, db, "SET GLOBAL read_only=OFF")
	mustExec(t, db, "INSERT INTO r.t VALUES (200)")
	if got, _ := binlog.ParseGTID(gtidPos(t, db)); got != last.GTID {
		t.Fatalf("next GTID %v, expected reuse of %v", got, last.GTID)
	}
}

func owner(t *testing.T, path string) uint32 {
	t.Helper()
	st, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Sys().(*syscall.Stat_t).Uid
}

func TestMakePlanTornAndGap(t *testing.T) {
	g := func(seq uint64, complete bool) Group {
		return Group{GTID: binlog.GTID{Server: 1, Seq: seq}, File: "binlog.000001", Start: int64(seq * 100), Complete: complete}
	}
	groups := []Group{g(1, true), g(2, true), g(3, false)}
	p, _ := MakePlan(groups, []bool{true, true, true})
	if len(p.Kept) != 2 || p.Offset != 300 {
		t.Fatalf("torn group kept: %v", p)
	}
	// Once one group is invalid, everything after it is cut, even if valid.
	p, _ = MakePlan([]Group{g(1, true), g(2, true), g(3, true)}, []bool{true, false, true})
	if len(p.Kept) != 1 || len(p.Cut) != 2 || p.Offset != 200 {
		t.Fatalf("%v", p)
	}
	if _, err := MakePlan(groups, []bool{true}); err == nil {
		t.Fatal("verdict count mismatch accepted")
	}
}

// planCutLast plans the cut of the last group, the one the cluster never
// chose in these tests.
func planCutLast(t *testing.T, groups []Group) Plan {
	t.Helper()
	valid := make([]bool, len(groups))
	for i := range valid {
		valid[i] = i < len(groups)-1
	}
	plan, err := MakePlan(groups, valid)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// startServer starts the test MariaDB number id and opens it as root
// with read_only off and database r created; ctx ends after timeout. The
// test's cleanup closes db and stops the server.
func startServer(t *testing.T, id uint32, timeout time.Duration) (*mysqld.Instance, context.Context, *sql.DB) {
	t.Helper()
	inst := mysqld.NewTestInstance(t, id)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	db := inst.TestDB(t)
	mustExec(t, db, "SET GLOBAL read_only=OFF")
	mustExec(t, db, "CREATE DATABASE r")
	return inst, ctx, db
}

func mustExec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// A graceful shutdown of a master with a commit waiting for its ACK
// commits it in InnoDB (DESIGN.md, measured). Cutting the binlog cannot
// undo that; recovery must notice at the next start and refuse the node.
func TestGracefulShutdownCommittedPastCut(t *testing.T) {
	inst, ctx, db := startServer(t, 8, 3*time.Minute)
	mustExec(t, db, "CREATE TABLE r.t (id INT PRIMARY KEY) ENGINE=InnoDB")
	mustExec(t, db, "INSERT INTO r.t VALUES (1)")
	mustExec(t, db, "SET GLOBAL rpl_semi_sync_master_enabled=ON")
	pending := startPendingCommit(ctx, t, db)
	if err := inst.Shutdown(time.Minute); err != nil { // graceful: the mistake
		t.Fatal(err)
	}
	<-pending
	groups, err := Scan(inst.BinlogIndex())
	if err != nil {
		t.Fatal(err)
	}
	plan := planCutLast(t, groups)
	clean, err := ClosedCleanly(inst.BinlogIndex())
	if err != nil || !clean {
		t.Fatalf("binlog after a graceful shutdown: clean=%v err=%v", clean, err)
	}
	err = CutAfterCleanShutdown(plan, clean)
	if !errors.Is(err, ErrCommittedPastCut) {
		t.Fatalf("cut after a clean shutdown not refused: %v", err)
	}
	t.Log(err)
	// Had it been cut anyway, the row would be there regardless.
	if plan, err = Apply(inst.BinlogIndex(), plan); err != nil {
		t.Fatal(err)
	}
	if err := inst.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM r.t WHERE id=100").Scan(&n); err != nil || n != 1 {
		t.Fatalf("expected the committed-at-shutdown row to be there (the reason for the check): n=%d err=%v", n, err)
	}
}

// threeRows creates r.t (InnoDB) with the ids 1 to 3 and returns the
// binlog position after them.
func threeRows(t *testing.T, db *sql.DB) string {
	t.Helper()
	mustExec(t, db, "CREATE TABLE r.t (id INT PRIMARY KEY) ENGINE=InnoDB")
	for i := 1; i <= 3; i++ {
		mustExec(t, db, "INSERT INTO r.t VALUES (?)", i)
	}
	return gtidPos(t, db)
}

// cutRolledBack checks, after the restart, that the cut pending commit
// (id 100) is gone and threeRows' rows and binlog position are back.
func cutRolledBack(t *testing.T, db *sql.DB, before string) {
	t.Helper()
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM r.t WHERE id=100").Scan(&n); err != nil || n != 0 {
		t.Fatalf("cut transaction present after restart: n=%d err=%v", n, err)
	}
	if err := db.QueryRow("SELECT COUNT(*) FROM r.t WHERE id IN (1, 2, 3)").Scan(&n); err != nil || n != 3 {
		t.Fatalf("kept rows: %d %v", n, err)
	}
	if got := gtidPos(t, db); got != before {
		t.Fatalf("gtid_binlog_pos after cut = %s, want %s", got, before)
	}
}

// killPendingCommit kills the server (SIGKILL) while the insert of id 100
// into r.t is in its binlog and waits for its semi-sync ACK (no replica, so
// it waits forever), and fails the test if that commit reported success.
func killPendingCommit(ctx context.Context, t *testing.T, inst *mysqld.Instance, db *sql.DB) {
	t.Helper()
	if err := killWhileWaiting(ctx, t, inst, db, "INSERT INTO r.t VALUES (100)"); err == nil {
		t.Fatal("pending commit reported success")
	}
}

// killWhileWaiting turns semi-sync on, runs stmt until it waits for its
// ACK, kills the server (SIGKILL) and returns stmt's outcome.
func killWhileWaiting(ctx context.Context, t *testing.T, inst *mysqld.Instance, db *sql.DB, stmt string) error {
	t.Helper()
	mustExec(t, db, "SET GLOBAL rpl_semi_sync_master_enabled=ON")
	done := startWaiting(ctx, t, db, stmt)
	if err := inst.Kill(); err != nil {
		t.Fatal(err)
	}
	return <-done
}

// startPendingCommit inserts id 100 into r.t in the background and waits
// until that commit is in the binlog and waiting for its semi-sync ACK
// (semi-sync must be ON with no replica). It fails the test if the commit
// returns first. The returned channel gets the commit's outcome.
func startPendingCommit(ctx context.Context, t *testing.T, db *sql.DB) <-chan error {
	t.Helper()
	return startWaiting(ctx, t, db, "INSERT INTO r.t VALUES (100)")
}

// startWaiting runs stmt in the background and returns once one session
// waits for its semi-sync ACK (semi-sync ON, no replica); it fails the
// test if stmt returns first. The channel gets stmt's outcome.
func startWaiting(ctx context.Context, t *testing.T, db *sql.DB, stmt string) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := db.ExecContext(ctx, stmt)
		done <- err
	}()
	for {
		var name string
		var waiting int
		if err := db.QueryRow("SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_master_wait_sessions'").Scan(&name, &waiting); err != nil {
			t.Fatal(err)
		}
		if waiting == 1 {
			return done
		}
		select {
		case err := <-done:
			t.Fatalf("%s returned without an ACK: %v", stmt, err)
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
