package node

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/role"
	"phxgo/binlogd/rolectl"
	"phxgo/masterlease"
)

// pollEvery is how often MariaDB is asked while anything is in motion.
// pollQuietEvery is how often it is asked while it is settled: it has
// applied the whole valid log, InnoDB has synced that position, and a
// replica replicates with no lag. Settled, the three queries of a poll
// only read the same answers again (on an idle cluster they were about
// 2/3 of each MariaDB's CPU and 1/8 of binlogd's). A new entry in the
// log (the log's applied index moves), a change of role, master or term
// (the lease's notification), a restarted MariaDB or stopping ends the
// quiet at once (wakeLoops), so failover (canAcquire, MarkCaughtUp), the durable
// position and lag under load are as fresh as before. What only MariaDB
// sees while the log stands still (a replication thread stopping, a
// local write) shows within pollQuietEvery; mariadbd's death is seen at
// once through its process (supervise) and the capture stream.
//
// Settled, the loop sleeps until one of those wakes it (the lease's
// renewals move the log every RenewInterval; each costs a look at the
// state, no query) instead of ticking every pollEvery to find nothing
// to do: 10 wake-ups a second on every idle node.
const (
	pollEvery      = 100 * time.Millisecond
	pollQuietEvery = time.Second
)

// poll refreshes what binlogd knows of its MariaDB, keeps a replica
// pointed at its own endpoint, and tells the lease when a new master has
// caught up.
func (n *Node) poll(ctx context.Context) {
	t := time.NewTimer(pollEvery)
	defer t.Stop()
	leaseCh, cancel := n.lease.Watch()
	defer cancel()
	var lastRepoint, lastQuery time.Time
	var lastDB *sql.DB
	var lastLease masterlease.Status // the lease as it was at the last query
	var ps pollState
	settled := false
	var appliedCh <-chan struct{} // set while settled: the log moving ends the quiet
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-leaseCh:
		case <-appliedCh:
		case <-n.ctl.pollWake:
		}
		appliedCh = nil
		db := n.conn()
		if db == nil {
			settled, ps = false, pollState{}
			t.Reset(pollEvery)
			continue
		}
		if db != lastDB {
			ps = pollState{}
		}
		logCh := n.px.AppliedCh() // before the lease is read: a move after the read closes it
		ls := n.lease.Status()
		g := *n.applied.Load()
		calm := settled && db == lastDB && sameTerm(ls, lastLease) && quiet(ls, g, n.stopping.Load())
		if !calm || time.Since(lastQuery) >= pollQuietEvery {
			lastDB, lastQuery, lastLease = db, time.Now(), ls
			before := g
			settled = n.pollMySQL(ctx, db, ls, &ps)
			n.m.mysqlPolls.Inc()
			if g = *n.applied.Load(); g != before && ls.Role != masterlease.RoleReplica {
				n.wakeRole() // CaughtUp, which a master or candidate's controller reads
			}
			calm = settled && quiet(ls, g, n.stopping.Load())
		}
		if ls.Role == masterlease.RoleCandidate && g == binlog.GTID(ls.State.LastGTID) {
			n.lease.MarkCaughtUp(ls.State.LastBatchIndex)
		}
		if time.Since(lastRepoint) > rolectl.RepointInterval && !n.stopping.Load() {
			lastRepoint = time.Now()
			n.repoint(ctx)
		}
		wait := pollEvery
		if calm {
			// Asleep until the next due query or repoint, or until the
			// log or the lease moves.
			appliedCh = logCh
			wait = max(min(pollQuietEvery-time.Since(lastQuery), rolectl.RepointInterval-time.Since(lastRepoint)), pollEvery)
		}
		t.Reset(wait)
	}
}

// quiet: nothing outside MariaDB asks for a fresh look. A candidate waits
// for its MariaDB to catch up, and a log that moved past the applied
// position means MariaDB has work to show.
func quiet(ls masterlease.Status, applied binlog.GTID, stopping bool) bool {
	return !stopping && ls.Role != masterlease.RoleCandidate && applied == binlog.GTID(ls.State.LastGTID)
}

// sameTerm: the same role under the same master and term. A change of
// either repoints or promotes this MariaDB, so replication is worth a
// fresh look.
func sameTerm(a, b masterlease.Status) bool {
	return a.Role == b.Role && a.State.Master == b.State.Master && a.State.Epoch == b.State.Epoch
}

// replStatusEvery is how often a poll in motion re-reads SHOW SLAVE
// STATUS when nothing says replication changed. That statement returns
// some sixty columns and was the poll's dearest part (about 11% of a
// busy replica binlogd's CPU at one read per 100 ms). What it feeds is
// shown, not decided on: Seconds_Behind_Master (status, lag metric; whole
// seconds, so 1 s costs it little), the replication state text, and the
// settled test (a stale view only delays the quiet). Every safety and
// routing decision reads the applied position and the synced position,
// which every poll still reads fresh. The cheap status read of each poll
// carries Slave_running (both threads running), so a thread that stops
// or starts, and a change of role, master or term, re-reads it at once.
const replStatusEvery = time.Second

// pollState is what one poll loop keeps between its rounds of queries.
type pollState struct {
	replAt      time.Time          // last SHOW SLAVE STATUS; zero: read it next round
	replLease   masterlease.Status // the lease as it was then
	replRunning string             // Slave_running as it was then
	repl        role.Status
}

// pollMySQL reads, in one round trip, the applied position and then the
// redo LSNs (in that order: the durable tracker needs the position read
// first) with Slave_running, and the replication status when it may have
// changed (see replStatusEvery). It reports whether MariaDB is settled
// (see pollQuietEvery).
func (n *Node) pollMySQL(ctx context.Context, db *sql.DB, ls masterlease.Status, ps *pollState) (settled bool) {
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	r, err := readPoll(qctx, db)
	if err != nil {
		ps.replAt = time.Time{}
		return false
	}
	g := r.applied
	n.applied.Store(&g)
	n.ctl.durable.observe(g, r.lsnCurrent, r.lsnFlushed)
	if ps.needRepl(ls, r.slaveRunning, time.Now()) {
		st, err := role.ReplicaStatus(qctx, db)
		if err != nil {
			ps.replAt = time.Time{}
			return false
		}
		ps.replAt, ps.replLease, ps.replRunning, ps.repl = time.Now(), ls, r.slaveRunning, st
		s := st.String()
		n.replInfo.Store(&s)
		lag := int64(-1)
		if st.SecondsBehind.Valid {
			lag = st.SecondsBehind.Int64
		}
		n.lagSecs.Store(lag)
	}
	d, known := n.ctl.durable.get()
	return settledMySQL(ls, g, d, known, ps.repl)
}

// needRepl: SHOW SLAVE STATUS is due, being older than replStatusEvery or
// possibly changed (never read, Slave_running flipped, or a new role,
// master or term repointed replication).
func (ps *pollState) needRepl(ls masterlease.Status, running string, now time.Time) bool {
	return ps.replAt.IsZero() || now.Sub(ps.replAt) >= replStatusEvery ||
		running != ps.replRunning || !sameTerm(ls, ps.replLease)
}

// pollQuery is a poll's reads in one round trip (the admin connection
// runs multi-statements): MariaDB runs the statements in order, so the
// position is read before the LSNs, as role.Applied then readLSNs
// (relaxed.go) were.
const pollQuery = "SELECT @@GLOBAL.gtid_current_pos; " +
	"SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_lsn_current', 'Innodb_lsn_flushed', 'Slave_running')"

// pollRead is what pollQuery answers. slaveRunning is "ON" while both
// replication threads run ("" if the server does not report it, which
// leaves SHOW SLAVE STATUS to its timer and the other triggers).
type pollRead struct {
	applied                binlog.GTID
	lsnCurrent, lsnFlushed uint64
	slaveRunning           string
}

func readPoll(ctx context.Context, db *sql.DB) (r pollRead, err error) {
	rows, err := db.QueryContext(ctx, pollQuery)
	if err != nil {
		return r, fmt.Errorf("poll MariaDB: %w", err)
	}
	defer rows.Close()
	var pos string
	if !rows.Next() {
		return r, fmt.Errorf("read gtid_current_pos: no row (%v)", rows.Err())
	}
	if err := rows.Scan(&pos); err != nil {
		return r, fmt.Errorf("read gtid_current_pos: %w", err)
	}
	if r.applied, err = onePosition(pos); err != nil {
		return r, err
	}
	if !rows.NextResultSet() {
		return r, fmt.Errorf("read InnoDB LSNs: no result (%v)", rows.Err())
	}
	n := 0
	var k, v string
	for rows.Next() {
		if err := rows.Scan(&k, &v); err != nil {
			return r, err
		}
		var dst *uint64
		switch k {
		case "Innodb_lsn_current":
			dst = &r.lsnCurrent
		case "Innodb_lsn_flushed":
			dst = &r.lsnFlushed
		case "Slave_running":
			r.slaveRunning = v
			continue
		default:
			continue
		}
		x, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return r, fmt.Errorf("InnoDB status %s=%q: %w", k, v, err)
		}
		*dst, n = x, n+1
	}
	if err := rows.Err(); err != nil {
		return r, err
	}
	if n != 2 {
		return r, errors.New("InnoDB LSN status variables missing")
	}
	return r, nil
}

// onePosition parses gtid_current_pos as role.Applied does: phxgo's chain
// is one GTID domain.
func onePosition(s string) (binlog.GTID, error) {
	l, err := binlog.ParseGTIDList(s)
	if err != nil {
		return binlog.GTID{}, err
	}
	switch len(l) {
	case 0:
		return binlog.GTID{}, nil
	case 1:
		return l[0], nil
	default:
		return binlog.GTID{}, fmt.Errorf("%w: %s", role.ErrSeveralDomains, s)
	}
}

// settledMySQL: the whole valid log applied and synced, and a replica's
// replication running without lag (a master has none to watch).
func settledMySQL(ls masterlease.Status, applied, durable binlog.GTID, durableKnown bool, st role.Status) bool {
	if applied != binlog.GTID(ls.State.LastGTID) || !durableKnown || durable != applied {
		return false
	}
	if ls.Role == masterlease.RoleMaster {
		return true
	}
	return st.IORunning == "Yes" && st.SQLRunning == "Yes" && st.SecondsBehind.Valid && st.SecondsBehind.Int64 == 0
}
