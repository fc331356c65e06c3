package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/capture"
	"phxgo/binlogd/role"
	"phxgo/masterlease"
)

// roleLoop follows the lease: it turns MariaDB into a master once the
// lease says ready, and back into a replica the moment it does not.
func (n *Node) roleLoop(ctx context.Context) {
	ch, cancel := n.lease.Watch()
	defer cancel()
	// The lease's own deadline passes without a state change; look at it
	// often as well as on every notification.
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	lastCampaign := time.Now()
	for {
		var st masterlease.Status
		select {
		case <-ctx.Done():
			return
		case st = <-ch:
		case <-t.C:
			st = n.lease.Status()
		}
		n.m.observe(st)
		n.roleMu.Lock()
		master := n.isMaster
		n.roleMu.Unlock()
		if master && !n.px.IsLeader() && time.Since(lastCampaign) > n.cfg.LeaseDuration.Duration {
			lastCampaign = time.Now()
			n.leadPaxos()
		}
		switch {
		case master && (st.Role != masterlease.RoleMaster || n.unsafe.Load() != nil):
			n.stepDown(ctx, fmt.Sprintf("lease lost (role %s, master %d, epoch %d)", st.Role, st.State.Master, st.State.Epoch))
		case !master && st.Role == masterlease.RoleMaster && n.unsafe.Load() == nil && n.mysqlUp.Load():
			if err := n.becomeMaster(ctx, st); err != nil {
				n.log.Error("could not become master; giving up the term", "err", err)
				n.stepDown(ctx, "becoming master failed: "+err.Error())
				fctx, c := context.WithTimeout(ctx, 5*time.Second)
				_, _ = n.lease.Fence(fctx)
				c()
			}
		}
	}
}

// becomeMaster runs once this node holds a valid lease and its MariaDB has
// applied every valid batch before the term.
func (n *Node) becomeMaster(ctx context.Context, st masterlease.Status) error {
	n.switchMu.Lock()
	defer n.switchMu.Unlock()
	if cur := n.lease.Status(); cur.Role != masterlease.RoleMaster || cur.State.Epoch != st.State.Epoch {
		return nil // the term ended while a repoint held switchMu
	}
	db := n.conn()
	if db == nil {
		return errNoMySQL
	}
	after := binlog.GTID(st.State.LastGTID)
	if got := *n.applied.Load(); got != after {
		return fmt.Errorf("MariaDB at %s, log at %s", got, after)
	}
	n.leadPaxos()
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := role.BecomeMaster(qctx, db); err != nil {
		return err
	}
	if err := capture.CheckServer(qctx, db); err != nil {
		_ = role.SetReadOnly(qctx, db)
		if errors.Is(err, capture.ErrBadSettings) {
			n.setUnsafe(err.Error())
		}
		return err
	}
	ccfg := capture.DefaultConfig()
	ccfg.Addr, ccfg.User, ccfg.Password = n.cfg.MySQLLocalAddr(), n.cred.CaptureUser, n.cred.CapturePassword
	ccfg.ServerID = 1000 + n.cfg.ID
	ccfg.After = after
	ccfg.Logger = n.log
	ccfg.BatchMaxBytes = entryEventBytes
	sink := newLeaseSink(n.lease, st.State.Epoch, entryEventBytes)
	c, err := capture.New(ccfg, sink)
	if err != nil {
		return err
	}
	cctx, ccancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	n.roleMu.Lock()
	n.isMaster, n.capStop, n.capDone = true, ccancel, done
	n.capStats = func() string { return fmt.Sprintf("%+v", c.Stats()) }
	n.capture.Store(c)
	n.roleMu.Unlock()
	go func() {
		err := c.Run(cctx)
		close(done)
		if cctx.Err() != nil {
			return
		}
		if errors.Is(err, capture.ErrUnsafe) || errors.Is(err, capture.ErrBadSettings) {
			n.setUnsafe(err.Error())
		} else {
			n.log.Error("capture stopped; stepping down", "err", err)
		}
		// End the term: Fence drops this node's own deadline before it
		// proposes, so the role loop cannot make it master again meanwhile.
		go func() {
			fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := n.lease.Fence(fctx); err != nil {
				n.log.Warn("fence after capture failure", "err", err)
			}
		}()
		n.stepDown(context.Background(), "capture stopped: "+fmt.Sprint(err))
	}()
	n.log.Info("serving writes as master", "epoch", st.State.Epoch, "after", after.String())
	n.m.becameMaster.Inc()
	return nil
}

// leadPaxos makes this node, the master, lead the Paxos log too, in the
// background: its batches are then proposed without a forwarding hop and
// stay in the order capture pipelined them (fewer chain rejections).
func (n *Node) leadPaxos() {
	if n.px.IsLeader() {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), n.cfg.LeaseDuration.Duration)
		defer cancel()
		if err := n.px.Campaign(ctx); err != nil {
			n.log.Warn("could not take Paxos leadership; batches are forwarded", "err", err)
			return
		}
		n.log.Info("master leads the Paxos log")
	}()
}

// stepDown stops being master at once: read_only, stop capture, and kill
// mysqld if commits wait for an ACK that must never come.
func (n *Node) stepDown(ctx context.Context, why string) {
	n.roleMu.Lock()
	if !n.isMaster {
		n.roleMu.Unlock()
		return
	}
	n.isMaster = false
	stop, done := n.capStop, n.capDone
	n.roleMu.Unlock()
	n.log.Warn("stepping down", "why", why)
	db := n.conn()
	if db != nil {
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		if err := role.SetReadOnly(qctx, db); err != nil {
			n.log.Error("read_only on failed", "err", err)
		}
		cancel()
	}
	if stop != nil {
		stop()
		if done != nil {
			select {
			case <-done:
			case <-time.After(5 * time.Second):
			}
		}
	}
	n.killIfWaiting(ctx, "stepped down with commits waiting for an ACK")
}

// killIfWaiting SIGKILLs mysqld when commits wait for a semi-sync ACK. A
// graceful shutdown would commit them in InnoDB; a kill leaves them
// prepared, and recovery cuts them unless the log holds them.
func (n *Node) killIfWaiting(ctx context.Context, why string) {
	db := n.conn()
	if db == nil {
		return
	}
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	w, err := role.WaitingCommits(qctx, db)
	cancel()
	if err == nil && w == 0 {
		return
	}
	n.log.Warn("killing mariadbd (SIGKILL)", "why", why, "waiting", w, "err", err)
	n.m.mysqldKills.Inc()
	if err := n.inst.Kill(); err != nil {
		n.log.Error("kill mariadbd", "err", err)
	}
}

// shutdown stops the node's MariaDB safely: a master refuses new writes,
// lets waiting commits be acknowledged for a moment, fences its term, and
// then stops mysqld gracefully only if nothing waits; otherwise SIGKILL.
func (n *Node) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n.roleMu.Lock()
	master := n.isMaster
	n.roleMu.Unlock()
	db := n.conn()
	if master && db != nil {
		_ = role.SetReadOnly(ctx, db)
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) {
			if w, err := role.WaitingCommits(ctx, db); err == nil && w == 0 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		fctx, fcancel := context.WithTimeout(ctx, 5*time.Second)
		if _, err := n.lease.Fence(fctx); err != nil {
			n.log.Warn("fence at shutdown", "err", err)
		}
		fcancel()
	}
	n.stepDown(ctx, "shutdown")
	if !n.cfg.SuperviseMySQL || n.inst.Pid() == 0 {
		return
	}
	if db != nil {
		if w, err := role.WaitingCommits(ctx, db); err != nil || w > 0 {
			n.log.Warn("shutdown: commits waiting; SIGKILL mariadbd", "waiting", w, "err", err)
			_ = n.inst.Kill()
			return
		}
		_, _ = db.ExecContext(ctx, "STOP SLAVE")
	}
	if err := n.inst.Shutdown(60 * time.Second); err != nil {
		n.log.Error("mariadbd shutdown", "err", err)
	}
}
