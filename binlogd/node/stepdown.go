package node

import (
	"context"
	"database/sql"
	"fmt"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/role"
	"phxgo/binlogd/rolectl"
)

// checkQuiet carries out rolectl.CheckQuiet: a server that served writes
// is proven to hold nothing the log lacks (role.CheckQuiet), or the
// controller kills it. Why a count alone is not enough: rolectl/doc.go.
func (d *roleDriver) checkQuiet(ctx context.Context, db *sql.DB, p rolectl.Purpose) rolectl.Event {
	q := rolectl.Quiet{Purpose: p}
	if db == nil {
		q.Why = errNoMySQL.Error()
	} else {
		qctx, cancel := context.WithTimeout(ctx, rolectl.QuietTimeout)
		err := role.CheckQuiet(qctx, db, rolectl.BarrierWait, d.inLog)
		cancel()
		q.Proven = err == nil
		if err != nil {
			q.Why = err.Error()
		}
	}
	d.countQuiet("check", q.Proven)
	if !q.Proven {
		d.n.log.Warn("server that served writes is not provably quiet", "purpose", p, "why", q.Why)
	}
	return q
}

// release carries out rolectl.Release: the checks of checkQuiet, then
// semi-sync master off (role.ReleaseSemiSync), in one action under the
// driver's lock.
func (d *roleDriver) release(ctx context.Context, db *sql.DB) rolectl.Event {
	r := rolectl.Released{}
	if db == nil {
		r.Why = errNoMySQL.Error()
	} else {
		qctx, cancel := context.WithTimeout(ctx, rolectl.QuietTimeout)
		err := role.ReleaseSemiSync(qctx, db, rolectl.BarrierWait, d.inLog)
		cancel()
		r.OK = err == nil
		if err != nil {
			r.Why = err.Error()
		}
	}
	d.countQuiet("release", r.OK)
	if r.OK {
		d.n.log.Info("semi-sync master released: nothing waits and the binlog is in the log")
	} else {
		d.n.log.Warn("semi-sync master not released", "why", r.Why)
	}
	return r
}

func (d *roleDriver) countQuiet(what string, ok bool) {
	if d.quiet == nil {
		return
	}
	res := "proven"
	if !ok {
		res = "not_proven"
	}
	d.quiet.WithLabelValues(what, res).Inc()
}

// inLog is Node.inLog that remembers the last GTID it found in the log:
// a demoted master's binlog does not move between the step-down's check
// and the release (read_only, not replicating yet), and by the release the
// next master's writes have usually moved the log's last valid GTID on,
// so the release would replay the log again for the same answer.
func (d *roleDriver) inLog(ctx context.Context, g binlog.GTID) (bool, error) {
	if p := d.proven.Load(); p != nil && *p == g {
		return true, nil
	}
	ok, err := d.n.inLog(ctx, g)
	if ok {
		d.proven.Store(&g)
	}
	return ok, err
}

// inLog reports whether the log, as applied here, holds g as a valid
// transaction: the last valid GTID at once, else a replay (validGTIDs). A
// GTID of the current term whose batch is not chosen yet is not held: it
// may never be, so the server is not provably quiet.
func (n *Node) inLog(ctx context.Context, g binlog.GTID) (bool, error) {
	if binlog.GTID(n.lease.State().LastGTID) == g {
		return true, nil
	}
	v, err := n.validGTIDs(ctx, []binlog.GTID{g})
	if err != nil {
		return false, err
	}
	if len(v) != 1 {
		return false, fmt.Errorf("validGTIDs answered %d results for one GTID", len(v))
	}
	return v[0], nil
}
