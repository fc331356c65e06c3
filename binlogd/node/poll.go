package node

import (
	"context"
	"database/sql"
	"time"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/role"
	"phxgo/binlogd/rolectl"
	"phxgo/masterlease"
)

// pollEvery is the poll's tick, and how often MariaDB is asked while
// anything is in motion. pollQuietEvery is how often it is asked while it
// is settled: it has applied the whole valid log, InnoDB has synced that
// position, and a replica replicates with no lag. Settled, the three
// queries of a poll only read the same answers again (on an idle cluster
// they were about 2/3 of each MariaDB's CPU and 1/8 of binlogd's). A new
// entry in the log, a candidacy, a change of role, master or term, a
// restarted MariaDB or stopping ends the quiet at the next tick, so
// failover (canAcquire, MarkCaughtUp), the durable position and lag under
// load are as fresh as before. What only MariaDB sees while the log
// stands still (a replication thread stopping, a local write) shows
// within pollQuietEvery; mariadbd's death is seen at once through its
// process (supervise) and the capture stream.
const (
	pollEvery      = 100 * time.Millisecond
	pollQuietEvery = time.Second
)

// poll refreshes what binlogd knows of its MariaDB, keeps a replica
// pointed at its own endpoint, and tells the lease when a new master has
// caught up.
func (n *Node) poll(ctx context.Context) {
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	var lastRepoint, lastQuery time.Time
	var lastDB *sql.DB
	var lastLease masterlease.Status // the lease as it was at the last query
	settled := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		db := n.conn()
		if db == nil {
			settled = false
			continue
		}
		ls := n.lease.Status()
		g := *n.applied.Load()
		if !(settled && db == lastDB && sameTerm(ls, lastLease) && quiet(ls, g, n.stopping.Load()) && time.Since(lastQuery) < pollQuietEvery) {
			lastDB, lastQuery, lastLease = db, time.Now(), ls
			settled = n.pollMySQL(ctx, db, ls)
			n.m.mysqlPolls.Inc()
			g = *n.applied.Load()
		}
		if ls.Role == masterlease.RoleCandidate && g == binlog.GTID(ls.State.LastGTID) {
			n.lease.MarkCaughtUp(ls.State.LastBatchIndex)
		}
		if time.Since(lastRepoint) > rolectl.RepointInterval && !n.stopping.Load() {
			lastRepoint = time.Now()
			n.repoint(ctx)
		}
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

// pollMySQL reads the applied position, the redo LSNs (in that order: the
// durable tracker needs the position read first) and the replication
// status, and reports whether MariaDB is settled (see pollQuietEvery).
func (n *Node) pollMySQL(ctx context.Context, db *sql.DB, ls masterlease.Status) (settled bool) {
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	g, err := role.Applied(qctx, db)
	if err != nil {
		return false
	}
	n.applied.Store(&g)
	cur, flushed, err := readLSNs(qctx, db)
	if err != nil {
		return false
	}
	n.ctl.durable.observe(g, cur, flushed)
	st, err := role.ReplicaStatus(qctx, db)
	if err != nil {
		return false
	}
	s := st.String()
	n.replInfo.Store(&s)
	lag := int64(-1)
	if st.SecondsBehind.Valid {
		lag = st.SecondsBehind.Int64
	}
	n.lagSecs.Store(lag)
	d, known := n.ctl.durable.get()
	return settledMySQL(ls, g, d, known, st)
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
