package role

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"phxgo/binlogd/binlog"
)

// ErrNotQuiet means a server that served writes could not be proven to
// hold no commit the log lacks: semi-sync must stay on (and the server be
// killed) rather than release anything.
var ErrNotQuiet = errors.New("role: not provably quiet")

// ErrSemiSyncOn means BecomeReplica found semi-sync master still on: only
// ReleaseSemiSync, after its checks, may turn it off (a waiting commit
// would return OK to its client without being in the log).
var ErrSemiSyncOn = errors.New("role: semi-sync master still on; release it first")

// InLog reports whether the log holds g as a valid transaction (or as an
// ancestor of its last valid one). An error means it cannot tell.
type InLog func(ctx context.Context, g binlog.GTID) (bool, error)

// ReadOnlyBarrier turns read_only on and returns only once the server
// completed the change, which MariaDB 10.11 does only when no commit is in
// progress: a commit takes the BACKUP COMMIT lock before its read_only check
// and keeps it through binlog write, engine commit and the semi-sync wait
// (handler.cc ha_commit_trans), and the change waits for that lock
// (sys_vars.cc fix_read_only, make_global_read_lock_block_commit). So after
// it no commit of an account without READ ONLY ADMIN is in flight, nor can
// one start. A commit blocked for an ACK blocks it: the server gives up
// after wait (lock_wait_timeout), so no pending change is left behind,
// and read_only stays as it was. Already on (set by such a change earlier)
// it returns at once, which is as good.
func ReadOnlyBarrier(ctx context.Context, db *sql.DB, wait time.Duration) error {
	secs := max(int(wait/time.Second), 1)
	return exec(ctx, db, fmt.Sprintf("SET STATEMENT lock_wait_timeout=%d FOR SET GLOBAL read_only=ON", secs))
}

// barrierWait is how long MariaDB may wait for the read_only change: until
// ctx's deadline, so that the server gives up about when the caller does
// (a dropped connection ends the wait too, measured on 10.11, but only
// once the server notices).
func barrierWait(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return time.Until(d)
	}
	return 10 * time.Second
}

// CheckQuiet proves that a server that served writes holds nothing the
// log lacks, in an order where each step relies on the one before:
// read_only on by a completed change (ReadOnlyBarrier: nothing in flight,
// nothing can start), no session waiting for an ACK, every client
// statement still running interrupted and ended (interrupt.go), and its
// gtid_binlog_pos held by the log (a commit released without an ACK, e.g.
// by KILL QUERY, which 10.11 answers with OK, left a GTID the log lacks).
// It returns nil or an error wrapping ErrNotQuiet.
func CheckQuiet(ctx context.Context, db *sql.DB, wait time.Duration, inLog InLog) error {
	if err := ReadOnlyBarrier(ctx, db, wait); err != nil {
		return fmt.Errorf("%w: read_only barrier: %v", ErrNotQuiet, err)
	}
	n, err := WaitingCommits(ctx, db)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotQuiet, err)
	}
	if n > 0 {
		return fmt.Errorf("%w: %d sessions wait for an ACK", ErrNotQuiet, n)
	}
	// A statement that passed its read_only check before the barrier can
	// still be running, or start its work only now: a DDL checks read_only
	// before it takes its backup lock, so it queued behind the barrier and
	// runs after it (ddl_test.go). Nothing that runs now may finish.
	if err := interruptStatements(ctx, db); err != nil {
		return fmt.Errorf("%w: %v", ErrNotQuiet, err)
	}
	g, err := BinlogPos(ctx, db)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotQuiet, err)
	}
	if g.IsZero() {
		return nil // an empty binlog holds nothing the log lacks
	}
	ok, err := inLog(ctx, g)
	if err != nil {
		return fmt.Errorf("%w: is %s in the log: %v", ErrNotQuiet, g, err)
	}
	if !ok {
		return fmt.Errorf("%w: the binlog holds %s, which the log does not", ErrNotQuiet, g)
	}
	return nil
}

// ReleaseSemiSync turns semi-sync master off once CheckQuiet proved that
// no commit waits and none can start: turning it off releases every
// waiting commit with OK, so it is the one statement a demoted master
// must never run early. Between the check and the statement nothing can
// commit (read_only holds; binlogd's own admin account writes nothing).
func ReleaseSemiSync(ctx context.Context, db *sql.DB, wait time.Duration, inLog InLog) error {
	if err := CheckQuiet(ctx, db, wait, inLog); err != nil {
		return err
	}
	g, err := BinlogPos(ctx, db)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotQuiet, err)
	}
	if err := exec(ctx, db, "SET GLOBAL rpl_semi_sync_master_enabled=OFF"); err != nil {
		return err
	}
	// Nothing can have moved the binlog (read_only, nothing running);
	// if it did, semi-sync is off already and only a kill is left.
	h, err := BinlogPos(ctx, db)
	if err != nil {
		return fmt.Errorf("%w: after the release: %v", ErrNotQuiet, err)
	}
	if h != g {
		return fmt.Errorf("%w: the binlog moved from %s to %s during the release", ErrNotQuiet, g, h)
	}
	return nil
}

// BinlogPos returns the server's @@gtid_binlog_pos in the one domain.
func BinlogPos(ctx context.Context, db *sql.DB) (binlog.GTID, error) {
	return globalGTID(ctx, db, "gtid_binlog_pos")
}

// SemiSyncOn reads @@rpl_semi_sync_master_enabled.
func SemiSyncOn(ctx context.Context, db *sql.DB) (bool, error) {
	var on bool
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.rpl_semi_sync_master_enabled").Scan(&on); err != nil {
		return false, fmt.Errorf("role: read rpl_semi_sync_master_enabled: %w", err)
	}
	return on, nil
}
