package node

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"phxgo/masterlease"
	pb "phxgo/proto"
)

// Read windows (DESIGN.md "Reads"; sqlproxy/window.go is the other side).
//
// A non-master proxy may send statements straight to the master's MariaDB
// while it holds a window the master granted, and the master node's own
// proxy serves from its MariaDB only under one too (its Status push,
// watch.go, carries no deadline it could trust): it asks at its local time
// t0, the master answers w <= its remaining lease r, and the proxy uses
// the master until t0 + w - m (m: the lease's DriftMargin). The master
// records the latest end it granted, now + w on its own clock, which is
// never after its own deadline.
//
// Why no other master serves while a window runs:
//   - Lease expiry (crash, pause, partition): every window ends before
//     the master's deadline in real time (sqlproxy/doc.go has the drift
//     argument: t0 precedes the grant, and (w-m)/(1-ε) <= w/(1+ε) for the
//     lease's own drift bound ε <= m/(2d-m)), and masterlease already
//     keeps every other node from serving before that deadline.
//   - Fence and Switchover end a term early: the master drops its
//     deadline and the others may elect as soon as the Fence (or the
//     grant to the switchover target) is chosen. windowGate sits between
//     the lease and the log and holds such a proposal back until the
//     latest granted window has ended. The deadline is dropped before the
//     gate looks, and grants read the deadline under the same mutex, so no
//     window is granted that the gate does not see.
//
// Windows are capped at d/windowFraction + m (usable d/windowFraction
// after the proxy takes off the margin) so a step-down waits at most
// that long; the proxy renews when half of the usable part is left: about
// 2 requests a second per proxy with the default 5 s lease.
// While a switchover quiesces (hold) windows are renewed only up to the
// end already granted, so they run out during the quiesce.

// windowFraction: a window lasts at most LeaseDuration/windowFraction
// plus the drift margin.
const windowFraction = 5

// readWindows is the master's record of the windows it granted. The zero
// value is ready to use.
type readWindows struct {
	mu   sync.Mutex
	end  time.Time // latest window end granted, on this process's clock
	held int       // > 0: a switchover is quiescing; grant nothing past end

	once    sync.Once
	granted prometheus.Counter
	refused *prometheus.CounterVec // reason
	waited  prometheus.Histogram
}

func (w *readWindows) metrics(reg *prometheus.Registry) {
	w.once.Do(func() {
		w.granted = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "phxgo", Subsystem: "binlogd", Name: "read_windows_granted_total",
			Help: "read windows this node granted as master (sqlproxy one-hop reads)"})
		w.refused = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "phxgo", Subsystem: "binlogd", Name: "read_windows_refused_total",
			Help: "read window requests this node refused or could not forward"}, []string{"reason"})
		w.waited = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "phxgo", Subsystem: "binlogd", Name: "read_window_stepdown_wait_seconds",
			Help: "time a Fence or Switchover waited for granted read windows to end", Buckets: prometheus.ExponentialBuckets(0.001, 2, 12)})
		if reg != nil {
			reg.MustRegister(w.granted, w.refused, w.waited)
		}
	})
}

// hold stops extending windows until the returned func runs (Switchover
// quiesces: the windows run out while the target catches up).
func (w *readWindows) hold() func() {
	w.mu.Lock()
	w.held++
	w.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			w.mu.Lock()
			w.held--
			w.mu.Unlock()
		})
	}
}

// grant records a window for a master whose own deadline is dl, read by
// the caller under w.mu (see grantWindow). It returns the window length.
func (w *readWindows) grantLocked(now, dl time.Time, max time.Duration) time.Duration {
	length := min(dl.Sub(now), max)
	if end := now.Add(length); end.After(w.end) {
		w.end = end
	}
	return length
}

// waitOut returns once every window granted so far has ended, or with
// ctx's error (nothing may be proposed then).
func (w *readWindows) waitOut(ctx context.Context) (time.Duration, error) {
	w.mu.Lock()
	end := w.end
	w.mu.Unlock()
	d := time.Until(end)
	if d <= 0 {
		return 0, nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return d, nil
	case <-ctx.Done():
		return 0, fmt.Errorf("binlogd: read windows granted until %v still run: %w", end, ctx.Err())
	}
}

// ReadWindow is the Admin RPC: the master grants; any other node forwards
// a proxy's request to the master once.
func (a *adminServer) ReadWindow(ctx context.Context, req *pb.ReadWindowRequest) (*pb.ReadWindowReply, error) {
	n := a.n
	n.win.metrics(n.m.reg)
	rep, reason := n.grantWindow()
	if rep != nil {
		n.win.granted.Inc()
		return rep, nil
	}
	master := n.lease.State().Master
	if req.Forwarded || master == 0 || master == n.cfg.ID {
		n.win.refused.WithLabelValues(reason).Inc()
		return nil, status.Errorf(codes.Unavailable, "node %d grants no read window: %s", n.cfg.ID, reason)
	}
	cl, err := n.peerAdmin(master)
	if err != nil {
		n.win.refused.WithLabelValues("forward").Inc()
		return nil, status.Errorf(codes.Unavailable, "read window: master %d: %v", master, err)
	}
	fctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	rep, err = cl.ReadWindow(fctx, &pb.ReadWindowRequest{Forwarded: true})
	if err != nil {
		n.win.refused.WithLabelValues("forward").Inc()
		return nil, status.Errorf(codes.Unavailable, "read window from master %d: %v", master, status.Convert(err).Message())
	}
	return rep, nil
}

// grantWindow grants a window if this node is the master with a valid
// lease and serves writes; otherwise it says why not.
func (n *Node) grantWindow() (*pb.ReadWindowReply, string) {
	if !n.serving() || n.unsafe.Load() != nil || !n.mysqlUp.Load() || n.stopping.Load() {
		return nil, "not serving as master"
	}
	self, ok := n.member(n.cfg.ID)
	if !ok || self.MySQLAddr == "" {
		return nil, "not a member"
	}
	cfg := n.lease.Config()
	n.win.mu.Lock()
	defer n.win.mu.Unlock()
	// Read the deadline under win.mu: a step-down drops it before
	// windowGate reads win.end under the same mutex.
	ls := n.lease.Status()
	now := time.Now()
	if !ls.Ready || ls.State.Master != n.cfg.ID || ls.Deadline.IsZero() || ls.Deadline.Sub(now) <= cfg.DriftMargin {
		return nil, "no valid lease"
	}
	most := cfg.LeaseDuration/windowFraction + cfg.DriftMargin
	if n.win.held > 0 {
		// A switchover is quiescing: renew only up to the end already
		// granted, so readers (the master's own proxy among them) keep
		// going while the wait the gate will make never grows.
		most = min(most, n.win.end.Sub(now))
		if most <= cfg.DriftMargin {
			return nil, "switchover in progress"
		}
	}
	w := n.win.grantLocked(now, ls.Deadline, most)
	return &pb.ReadWindowReply{MasterId: n.cfg.ID, Epoch: ls.State.Epoch, MysqlAddr: self.MySQLAddr,
		RemainingNs: int64(w), DriftMarginNs: int64(cfg.DriftMargin)}, ""
}

// windowGate is the log the lease proposes to: a proposal that ends this
// node's term early (a Fence, or a grant to another node: Switchover)
// waits until every read window it granted has ended.
type windowGate struct {
	masterlease.Log
	n *Node
}

// gate wraps lg for the lease (node.go: lease.Attach(n.gate(px))).
func (n *Node) gate(lg masterlease.Log) masterlease.Log { return windowGate{Log: lg, n: n} }

func (g windowGate) Propose(ctx context.Context, cmd []byte) (uint64, any, error) {
	if endsTerm(cmd, g.n.cfg.ID) {
		d, err := g.n.win.waitOut(ctx)
		if err != nil {
			return 0, nil, err
		}
		if d > 0 {
			g.n.win.metrics(g.n.m.reg)
			g.n.win.waited.Observe(d.Seconds())
			g.n.log.Info("waited for read windows before ending the term", "waited", d)
		}
	}
	return g.Log.Propose(ctx, cmd)
}

// endsTerm reports whether cmd is a Fence or a LeaseRequest for another
// node. It reads only the entry's top-level tag (and decodes the small
// lease request), so a binlog batch costs a few bytes of scanning.
func endsTerm(cmd []byte, self uint32) bool {
	b := cmd
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		switch num {
		case 4: // fence
			return true
		case 3: // lease_request
			e, err := masterlease.Decode(cmd)
			return err == nil && e.Lease.Candidate != self
		case 2, 5: // noop, binlog_batch
			return false
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return false
		}
		b = b[n+m:]
	}
	return false
}
