package node

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/capture"
	"phxgo/binlogd/events"
	"phxgo/binlogd/role"
	"phxgo/binlogd/rolectl"
	"phxgo/masterlease"
)

// roleDriver carries out the role controller's decisions (binlogd/rolectl):
// it observes the lease and MariaDB, steps the controller, and performs
// the actions in order. One mutex serializes steps and actions, so the
// statements that change MariaDB's role never interleave.
type roleDriver struct {
	n *Node

	mu      sync.Mutex // guards the fields below; held while actions run
	st      rolectl.State
	capStop context.CancelFunc
	capDone chan struct{}
	// tuneDone closes when this term's group commit tuner has turned the
	// wait off (groupwait.go).
	tuneDone chan struct{}
	// wake and pollWake (wakeRole, wakeLoops): node state the lease does
	// not publish changed; the role and poll loops look again.
	wake, pollWake chan struct{}
	changed        notice // serving, UNSAFE, MariaDB up/down changed: WatchStatus looks (watch.go)

	serving atomic.Bool // Master phase and its promotion carried out, for status readers
	relaxed atomic.Bool // MariaDB last set relaxed (KeepReplica), not made durable since
	resyncs atomic.Int64
	durable durableTracker
	lt      leaseTracker                // events.go
	quiet   *prometheus.CounterVec      // stepdown.go
	proven  atomic.Pointer[binlog.GTID] // stepdown.go: last GTID found valid in the log
}

func registerRoleMetrics(reg *prometheus.Registry, n *Node) {
	n.startEvents(reg)
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "phxgo", Subsystem: "binlogd", Name: "mysql_relaxed",
			Help: "1 while this node's MariaDB runs as a relaxed replica (sync_binlog=0, innodb_flush_log_at_trx_commit=2)"},
			func() float64 {
				if n.ctl.relaxed.Load() {
					return 1
				}
				return 0
			}),
		n.ctl.quiet,
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "phxgo", Subsystem: "binlogd", Name: "relaxed_resyncs_total",
			Help: "starts at which a relaxed replica's binlog disagreed with InnoDB after a crash and was reset to InnoDB's position"},
			func() float64 { return float64(n.ctl.resyncs.Load()) }),
	)
}

func newRoleDriver(n *Node) *roleDriver {
	return &roleDriver{n: n, st: rolectl.Initial(n.cfg.SuperviseMySQL),
		wake: make(chan struct{}, 1), pollWake: make(chan struct{}, 1),
		quiet: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "phxgo", Subsystem: "binlogd", Name: "quiet_checks_total",
			Help: "proofs that a MariaDB which served writes holds no commit the log lacks (check: at a step-down or stop; release: before semi-sync goes off), by result; not_proven means SIGKILL"},
			[]string{"what", "result"})}
}

// serving reports whether this node's MariaDB serves writes (the
// controller made it master and has not demoted it since).
func (n *Node) serving() bool { return n.ctl.serving.Load() }

// observation is the controller's view of the lease and MariaDB now.
func (n *Node) observation() rolectl.Obs {
	st := n.lease.Status()
	return rolectl.Obs{
		LeaseMaster: st.Role == masterlease.RoleMaster,
		LeaseEpoch:  st.State.Epoch,
		CaughtUp:    *n.applied.Load() == binlog.GTID(st.State.LastGTID),
		MySQLUp:     n.mysqlUp.Load(),
		Unsafe:      n.unsafe.Load() != nil,
		Stopping:    n.stopping.Load(),
	}
}

// roleLoop feeds the controller an observation whenever something it
// reads may have changed, rather than on a 50 ms tick (20 wake-ups a
// second on every node, idle or not):
//   - the lease publishes a change of role, master or epoch (Watch);
//   - the own lease deadline passes, which the lease publishes only at
//     its next RetryInterval: a timer set to the deadline itself, so a
//     master steps down at the deadline, no later than the tick did;
//   - wakeRole: the applied position, MariaDB up or down, UNSAFE or
//     stopping changed (node state the lease does not watch);
//   - otherwise every lease RetryInterval (250 ms at the default 5 s
//     lease), which retries an action that failed and bounds the delay
//     of any change a wakeRole was missed for.
func (n *Node) roleLoop(ctx context.Context) {
	ch, cancel := n.lease.Watch()
	defer cancel()
	t := time.NewTimer(0)
	defer t.Stop()
	lastCampaign := time.Now()
	go n.watchEvents(ctx)
	recheck := n.lease.Config().RetryInterval
	for {
		var st masterlease.Status
		select {
		case <-ctx.Done():
			return
		case st = <-ch:
		case <-n.ctl.wake:
			st = n.lease.Status()
		case <-t.C:
			st = n.lease.Status()
		}
		n.m.observe(st)
		n.noteLease(st)
		if n.serving() && !n.px.IsLeader() && time.Since(lastCampaign) > n.cfg.LeaseDuration.Duration {
			lastCampaign = time.Now()
			n.leadPaxos()
		}
		// The observation is taken under the driver's lock: a step that
		// waited for a running action must not act on an older view.
		n.ctl.step(ctx, func() rolectl.Event { return rolectl.Observed{Obs: n.observation()} })
		t.Reset(nextLook(n.lease.Status().Deadline, time.Now(), recheck))
	}
}

// nextLook is how long the role loop may wait for a notification before
// it looks again: until the own lease deadline passes (a timer fires at
// or after it, never before), and at most recheck.
func nextLook(deadline, now time.Time, recheck time.Duration) time.Duration {
	if deadline.IsZero() {
		return recheck
	}
	return max(min(deadline.Sub(now), recheck), 0)
}

// wakeRole asks the role loop for a fresh observation now (it never
// blocks: one pending wake covers any number of changes).
func (n *Node) wakeRole() { nudge(n.ctl.wake) }

// wakeLoops wakes the role loop, the poll and the status watchers:
// MariaDB came up or went down, the node became UNSAFE or is stopping.
func (n *Node) wakeLoops() {
	nudge(n.ctl.wake)
	nudge(n.ctl.pollWake)
	n.ctl.changed.notify()
}

func nudge(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// repoint re-asserts a replica's replication (rolectl.RepointInterval).
func (n *Node) repoint(ctx context.Context) {
	n.ctl.step(ctx, func() rolectl.Event { return rolectl.Repoint{Obs: n.observation()} })
}

// stepDown stops being master at once (switchover, storage failure).
func (n *Node) stepDown(ctx context.Context, why string) {
	n.ctl.step(ctx, func() rolectl.Event { return rolectl.StepDown{Why: why} })
}

// shutdown stops the node's MariaDB safely: a master refuses new writes,
// lets waiting commits be acknowledged for a moment, fences its term, and
// then mysqld stops gracefully only if nothing waits; otherwise SIGKILL.
// With handoff (a replica, or a master that handed over: handover.go)
// MariaDB is left running for the next binlogd instead, when nothing
// waits.
func (n *Node) shutdown(handoff bool) {
	ctx, cancel := context.WithTimeout(context.Background(), rolectl.ShutdownTimeout)
	defer cancel()
	n.ctl.step(ctx, func() rolectl.Event { return rolectl.Shutdown{Handoff: handoff} })
}

// step takes the lock, builds the event, steps the controller and carries
// out its actions; events the actions produce are stepped next, before
// anything else can be.
func (d *roleDriver) step(ctx context.Context, mk func() rolectl.Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	queue := []rolectl.Event{mk()}
	for len(queue) > 0 {
		ev := queue[0]
		queue = queue[1:]
		prev := d.st
		var acts []rolectl.Action
		d.st, acts = rolectl.Step(d.st, ev)
		// Status (and so every proxy) reads serving: it turns off before a
		// step-down's actions, but on only once a promotion's actions all
		// succeeded. Turned on with the Master phase, it reported a ready
		// master whose MariaDB was still read-only, and clients got 1290.
		if d.st.Phase != rolectl.Master && d.serving.Swap(false) {
			d.changed.notify()
		}
		if prev.Phase == rolectl.Master && d.st.Phase != rolectl.Master {
			d.n.publish(events.SteppedDown, "epoch_served", prev.Epoch, "why", stepDownWhy(ev), "now", d.st.String())
		}
		if prev.Phase != d.st.Phase || len(acts) > 0 {
			d.n.log.Debug("role controller", "from", prev.String(), "event", fmt.Sprintf("%T%+v", ev, ev), "to", d.st.String(), "actions", fmt.Sprint(acts))
		}
		done := true
		for _, a := range acts {
			next, stop := d.do(ctx, a)
			if next != nil {
				queue = append(queue, next)
			}
			if stop {
				done = false
				break
			}
		}
		if done && d.st.Phase == rolectl.Master && !d.serving.Swap(true) {
			d.changed.notify()
		}
	}
}

// do carries out one action. It returns the event the action produced (if
// any) and whether the rest of the batch must be skipped (a promotion
// step failed).
func (d *roleDriver) do(ctx context.Context, a rolectl.Action) (rolectl.Event, bool) {
	n := d.n
	db := n.conn()
	epoch := d.st.Epoch
	failed := func(err error) (rolectl.Event, bool) {
		n.log.Error("could not become master; giving up the term", "step", a.Kind.String(), "err", err)
		return rolectl.PromoteFailed{Epoch: epoch, Why: a.Kind.String() + ": " + err.Error(), Unsafe: errors.Is(err, capture.ErrBadSettings)}, true
	}
	switch a.Kind {
	case rolectl.LeadPaxos:
		n.leadPaxos()
	case rolectl.MakeDurable:
		if db == nil {
			return failed(errNoMySQL)
		}
		qctx, cancel := context.WithTimeout(ctx, rolectl.PromoteTimeout)
		defer cancel()
		if err := role.MakeDurable(qctx, db); err != nil {
			return failed(err)
		}
		d.relaxed.Store(false)
		if err := n.clearRelaxed(); err != nil {
			n.log.Warn("removing the relaxed marker", "err", err) // a needless check at the next start
		}
	case rolectl.OpenWrites:
		if db == nil {
			return failed(errNoMySQL)
		}
		qctx, cancel := context.WithTimeout(ctx, rolectl.PromoteTimeout)
		defer cancel()
		if err := role.BecomeMaster(qctx, db); err != nil {
			return failed(err)
		}
		if err := capture.CheckServer(qctx, db); err != nil {
			return failed(err)
		}
	case rolectl.StartCapture:
		if err := d.startCapture(a.Epoch); err != nil {
			return failed(err)
		}
		n.log.Info("serving writes as master", "epoch", a.Epoch, "after", binlog.GTID(n.lease.State().LastGTID).String())
		n.m.becameMaster.Inc()
		c := n.lastMasterChange()
		n.publish(events.BecameMaster, "after", binlog.GTID(n.lease.State().LastGTID).String(), "cause", c.cause, "previous", c.previous)
		if c.cause == "failover" {
			n.publish(events.Failover, "previous", c.previous, "new", n.cfg.ID)
		}
	case rolectl.SetReadOnly:
		if db == nil {
			return nil, false
		}
		qctx, cancel := context.WithTimeout(ctx, rolectl.SQLTimeout)
		defer cancel()
		if err := role.SetReadOnly(qctx, db); err != nil {
			n.log.Error("read_only on failed", "err", err)
		}
	case rolectl.StopCapture:
		if d.capStop != nil {
			d.capStop()
			select {
			case <-d.capDone:
			case <-time.After(rolectl.CaptureStopTimeout):
				n.log.Warn("capture did not stop in time", "timeout", rolectl.CaptureStopTimeout)
			}
			select {
			case <-d.tuneDone: // its own SET is bounded by 2 s
			case <-time.After(3 * time.Second):
				n.log.Warn("the group commit tuner did not stop in time")
			}
			d.capStop, d.capDone, d.tuneDone = nil, nil, nil
		}
	case rolectl.CountWaiting:
		w := rolectl.Waiting{Purpose: a.Purpose}
		if db != nil {
			qctx, cancel := context.WithTimeout(ctx, rolectl.SQLTimeout)
			k, err := role.WaitingCommits(qctx, db)
			cancel()
			w.N, w.Known = k, err == nil
		}
		return w, false
	case rolectl.CheckQuiet:
		return d.checkQuiet(ctx, db, a.Purpose), false
	case rolectl.Release:
		return d.release(ctx, db), false
	case rolectl.Kill:
		if n.inst == nil { // a witness: no MariaDB (witness.go)
			return nil, false
		}
		n.log.Warn("killing mariadbd (SIGKILL)", "why", a.Why)
		n.m.mysqldKills.Inc()
		if err := n.inst.Kill(); err != nil {
			n.log.Error("kill mariadbd", "err", err)
		}
	case rolectl.Fence:
		fctx, cancel := context.WithTimeout(ctx, rolectl.FenceTimeout)
		defer cancel()
		v, err := n.lease.Fence(fctx)
		if err != nil {
			n.log.Warn("fence", "why", a.Why, "err", err)
			n.publish(events.Fence, "why", a.Why, "err", err)
		} else {
			n.publish(events.Fence, "why", a.Why, "valid", v.Valid)
		}
	case rolectl.MarkUnsafe:
		n.setUnsafe(a.Why)
	case rolectl.KeepReplica:
		if db == nil {
			return nil, false
		}
		qctx, cancel := context.WithTimeout(ctx, rolectl.SQLTimeout)
		defer cancel()
		// Before replication starts, whatever else fails (groupwait.go).
		if n.cfg.GroupCommitWaitOrDefault() > 0 {
			if err := n.turnOffGroupWait(qctx, db); err != nil {
				n.log.Warn("turning a replica's group commit wait off failed", "err", err)
			}
		}
		if err := role.BecomeReplica(qctx, db, n.upstream()); err != nil {
			n.log.Warn("keeping MariaDB a replica failed", "err", err)
			return nil, false
		}
		if err := n.markRelaxed(); err != nil {
			n.log.Warn("relaxed marker not written; the replica stays durable", "err", err)
			return nil, false
		}
		if err := role.Relax(qctx, db); err != nil {
			n.log.Warn("relaxing a replica's durability failed", "err", err)
			return nil, false
		}
		d.relaxed.Store(true)
	case rolectl.AwaitDrained:
		if err := n.waitNoWaitingCommits(ctx, rolectl.DrainTimeout); err != nil {
			n.log.Warn("commits still waiting after the drain", "err", err)
		}
	case rolectl.Handoff:
		if !n.cfg.SuperviseMySQL || n.inst == nil || n.inst.Pid() == 0 {
			return nil, false
		}
		err := n.handoff(ctx, db)
		if err == nil {
			return nil, false
		}
		// The count was zero: a graceful stop is safe.
		n.log.Warn("could not hand MariaDB off to the next binlogd; stopping it", "err", err)
		if db != nil {
			_, _ = db.ExecContext(ctx, "STOP SLAVE")
		}
		if err := n.inst.Shutdown(rolectl.GracefulStopTimeout); err != nil {
			n.log.Error("mariadbd shutdown", "err", err)
		}
	case rolectl.GracefulStop:
		if !n.cfg.SuperviseMySQL || n.inst == nil || n.inst.Pid() == 0 {
			return nil, false
		}
		if db != nil {
			_, _ = db.ExecContext(ctx, "STOP SLAVE")
		}
		if err := n.inst.Shutdown(rolectl.GracefulStopTimeout); err != nil {
			n.log.Error("mariadbd shutdown", "err", err)
		}
	default:
		n.log.Error("role controller: unknown action", "action", a.String())
	}
	return nil, false
}

// startCapture starts this term's capture. When it stops on its own, the
// controller hears it as CaptureStopped.
func (d *roleDriver) startCapture(epoch uint64) error {
	n := d.n
	ccfg := capture.DefaultConfig()
	ccfg.Addr, ccfg.User, ccfg.Password = n.cfg.MySQLLocalAddr(), n.cred.CaptureUser, n.cred.CapturePassword
	ccfg.ServerID = rolectl.CaptureServerID(n.cfg.ID)
	// The new term has no valid batch but this capture's: the log's last
	// valid GTID is where MariaDB stood when the controller promoted it.
	ccfg.After = binlog.GTID(n.lease.State().LastGTID)
	ccfg.Logger = n.log
	ccfg.BatchMaxBytes = entryEventBytes
	sink := n.newLeaseSink(epoch)
	c, err := capture.New(ccfg, sink)
	if err != nil {
		return err
	}
	cctx, ccancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	d.capStop, d.capDone = ccancel, done
	n.capture.Store(c)
	// The tuner ends with the term; StopCapture waits for it too, so its
	// turn-off lands before the next role's statements (groupwait.go).
	tuned := make(chan struct{})
	d.tuneDone = tuned
	if w := n.cfg.GroupCommitWaitOrDefault(); w > 0 && n.conn() != nil {
		db := n.conn()
		go func() {
			defer close(tuned)
			n.tuneGroupCommit(cctx, db, w, func() ackTimes {
				st := c.Stats()
				return ackTimes{acks: st.Acks, sum: st.AckLatency}
			})
		}()
	} else {
		close(tuned)
	}
	go func() {
		err := c.Run(cctx)
		close(done)
		if cctx.Err() != nil {
			return // stopped by StopCapture
		}
		unsafe := errors.Is(err, capture.ErrUnsafe) || errors.Is(err, capture.ErrBadSettings)
		if !unsafe {
			n.log.Error("capture stopped; stepping down", "err", err)
		}
		n.ctl.step(context.Background(), func() rolectl.Event {
			return rolectl.CaptureStopped{Epoch: epoch, Why: fmt.Sprint(err), Unsafe: unsafe}
		})
	}()
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

// stepDownWhy names what ended a master's phase, for the stepped_down event.
func stepDownWhy(ev rolectl.Event) string {
	switch e := ev.(type) {
	case rolectl.StepDown:
		return e.Why
	case rolectl.Shutdown:
		return "shutdown"
	case rolectl.Observed:
		if !e.Obs.LeaseMaster {
			return "lost the lease"
		}
	}
	return fmt.Sprintf("%T", ev)
}
