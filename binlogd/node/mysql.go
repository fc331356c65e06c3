package node

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/capture"
	"phxgo/binlogd/events"
	"phxgo/binlogd/mysqld"
	"phxgo/binlogd/recovery"
	"phxgo/binlogd/role"
	"phxgo/paxos"
)

// supervise keeps the node's mariadbd running; every start is preceded by
// recovery, which cuts the binlog back to what the log holds.
func (n *Node) supervise(ctx context.Context) {
	backoff := time.Second
	unrecoverable := 0
	for ctx.Err() == nil {
		err := n.startMySQL(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if errors.Is(err, mysqld.ErrUnrecoverable) {
				unrecoverable++
			} else {
				unrecoverable = 0
			}
			if unrecoverable >= unrecoverableStarts {
				n.giveUpDatadir(ctx, err)
				return
			}
			n.log.Error("mariadbd not started; retrying", "err", err, "retry_in", backoff)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 10*time.Second)
			continue
		}
		backoff = time.Second
		n.mysqlUp.Store(true)
		n.wakeLoops()
		n.m.mysqldStarts.Inc()
		select {
		case <-ctx.Done():
			return // shutdown() stops it safely
		case <-n.inst.Done():
		}
		n.mysqlUp.Store(false)
		n.wakeLoops()
		n.dbMu.Lock()
		if n.db != nil {
			n.db.Close()
			n.db = nil
		}
		n.dbMu.Unlock()
		n.log.Warn("mariadbd exited; recovering and restarting it")
	}
}

func (n *Node) startMySQL(ctx context.Context) error {
	if err := n.inst.Init(ctx); err != nil {
		return err
	}
	adopted := n.adoptOrKill(ctx)
	if !adopted {
		if err := n.recoverBinlog(ctx); err != nil {
			return fmt.Errorf("recovery: %w", err)
		}
		sctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		err := n.inst.Start(sctx)
		cancel()
		if err != nil {
			return err
		}
	}
	db, err := n.inst.DB("")
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(8)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return err
	}
	if adopted {
		// A mariadbd a graceful stop handed off (adopt.go): still checked
		// as if it could have been written to meanwhile.
		if err := n.prepareAdopted(ctx, db); err != nil {
			db.Close()
			return n.refuseAdopted(ctx, err)
		}
	} else if err := n.resyncAfterRelaxed(ctx, db); err != nil {
		db.Close()
		return fmt.Errorf("resync a relaxed replica's binlog: %w", err)
	}
	// What InnoDB holds now is on disk: it was recovered from disk, or
	// just flushed. The poll follows the synced position from here.
	if g, err := role.Applied(ctx, db); err == nil {
		n.ctl.durable.reset(g, true)
	} else {
		n.ctl.durable.reset(binlog.GTID{}, false)
	}
	cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
	err = capture.CheckSettings(cctx, db)
	ccancel()
	if errors.Is(err, capture.ErrBadSettings) {
		// Refuse to run on it: a commit could be acknowledged before it is durable.
		db.Close()
		n.setUnsafe(err.Error())
		<-ctx.Done()
		return err
	}
	bctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = mysqld.Bootstrap(bctx, db, mysqld.Accounts{
		CaptureUser: n.cred.CaptureUser, CapturePassword: n.cred.CapturePassword,
		AppUser: n.cred.AppUser, AppPassword: n.cred.AppPassword, AppDatabases: n.cred.AppDatabases,
		ProxyUser: n.cred.ProxyUser, ProxyPassword: n.cred.ProxyPassword,
	})
	cancel()
	if err != nil {
		db.Close()
		return err
	}
	n.dbMu.Lock()
	n.db = db
	n.dbMu.Unlock()
	n.kickProxyNets() // the proxies' PROXY headers are taken once it is set (proxynets.go)
	return nil
}

// recoverBinlog cuts the local binlog at the first transaction that is
// not chosen and valid in the log. It waits for the cluster (a majority)
// to answer: starting mysqld without that answer could commit a
// transaction the log never held.
func (n *Node) recoverBinlog(ctx context.Context) error {
	groups, err := recovery.Scan(n.inst.BinlogIndex())
	if err != nil {
		if strings.Contains(err.Error(), "no such file") {
			return nil // fresh datadir: no binlog yet
		}
		return err
	}
	if len(groups) == 0 {
		return nil
	}
	gtids := make([]binlog.GTID, len(groups))
	for i, g := range groups {
		gtids[i] = g.GTID
	}
	for {
		valid, err := n.recoverPoint(ctx, n.cfg.ID, gtids)
		if err == nil {
			plan, err := recovery.MakePlan(groups, valid)
			if err != nil {
				return err
			}
			clean, err := recovery.ClosedCleanly(n.inst.BinlogIndex())
			if err != nil {
				return err
			}
			err = recovery.CutAfterCleanShutdown(plan, clean)
			if err == nil {
				err = recovery.NonTransactionalCut(plan)
			}
			if err != nil {
				n.setUnsafe(err.Error())
				<-ctx.Done() // never start this mysqld: it must be reseeded
				return err
			}
			if plan, err = recovery.Apply(n.inst.BinlogIndex(), plan); err != nil {
				return err
			}
			if len(plan.Cut) > 0 {
				n.log.Warn("recovery cut the binlog", "plan", plan.String())
				n.m.recoveryCuts.Add(float64(len(plan.Cut)))
				n.publish(events.RecoveryCut, "cut", len(plan.Cut), "plan", plan.String())
			} else {
				n.log.Info("recovery: binlog matches the log", "plan", plan.String())
			}
			return nil
		}
		n.log.Warn("recovery waits for the cluster", "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// recoverPoint answers which of node id's GTIDs are chosen and valid. If id
// holds the current term, a Fence for it is chosen first, so no batch of
// id's can become valid later; the barrier makes the answer reflect every
// entry chosen before the call.
func (n *Node) recoverPoint(ctx context.Context, id uint32, gtids []binlog.GTID) ([]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := n.lease.Sync(ctx)
	if err != nil {
		return nil, err
	}
	if st.State.Master == id {
		v, err := n.lease.FenceEpoch(ctx, st.State.Epoch)
		if err != nil {
			return nil, fmt.Errorf("fence epoch %d of node %d: %w", st.State.Epoch, id, err)
		}
		n.log.Info("fenced the term of a recovering master", "master", id, "epoch", st.State.Epoch, "valid", v.Valid)
		if _, err := n.lease.Sync(ctx); err != nil {
			return nil, err
		}
	}
	return n.validGTIDs(ctx, gtids)
}

// validGTIDs reports, for each GTID, whether it is a valid transaction of
// the log as applied here. The log may be compacted: it is replayed from
// its base, and a GTID before the base's last valid GTID cannot be checked
// one by one any more. Such a GTID is reported valid (a binlog that ends
// before the base belongs to a MariaDB that must be reseeded anyway, and
// its status says so; cutting it would only lose data), except one with
// the base's own sequence number, which must be that GTID.
func (n *Node) validGTIDs(ctx context.Context, gtids []binlog.GTID) ([]bool, error) {
	for attempt := 0; ; attempt++ {
		out, err := n.validGTIDsOnce(gtids)
		if err != nil && errors.Is(err, paxos.ErrCompacted) && attempt < 2 {
			continue // compacted while we read: start from the new base
		}
		return out, err
	}
}

func (n *Node) validGTIDsOnce(gtids []binlog.GTID) ([]bool, error) {
	return n.newLogSource().validGTIDs(gtids)
}

// validGTIDs replays the log from its base up to what is applied (see
// Node.validGTIDs).
func (s *logSource) validGTIDs(gtids []binlog.GTID) ([]bool, error) {
	want := map[binlog.GTID]int{}
	out := make([]bool, len(gtids))
	c, _, first, err := s.baseCursor()
	if err != nil {
		return nil, err
	}
	c.found = true
	for i, g := range gtids {
		if !first.IsZero() && g.Domain == first.Domain && g.Seq <= first.Seq {
			out[i] = g.Seq < first.Seq || g == first
			continue
		}
		want[g] = i
	}
	end := s.px.Applied()
	for c.next <= end {
		moved, err := c.fill()
		if err != nil {
			return nil, err
		}
		for _, t := range c.queue {
			if i, ok := want[t.GTID]; ok {
				out[i] = true
			}
		}
		c.queue = c.queue[:0]
		if i, ok := want[c.partialDone]; ok && !c.partialDone.IsZero() {
			out[i] = true
		}
		if !moved {
			break
		}
	}
	return out, nil
}

func (n *Node) upstream() role.Upstream {
	return role.Upstream{Addr: n.cfg.ReplAddr, User: n.cred.CaptureUser, Password: n.cred.CapturePassword}
}
