package node

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"phxgo/masterlease"
	pb "phxgo/proto"
)

// WatchStatus (Admin RPC) pushes this node's Status to a proxy: one at
// once, one on every change of what the proxy routes by (watchKey), and a
// keepalive with fresh figures every keepalive_ms. It replaces the
// proxies' Status poll (20 calls a second per proxy, the largest idle
// cost after MariaDB's polling).
//
// A push is news, not a promise: the proxy cannot tell how old a message
// is, so nothing in it may extend what the proxy serves. The master
// node's own proxy serves under a read window like any other
// (windows.go): a deadline from its own clock read before it asked, which
// the gate waits out before the master ends its term early. The push only
// makes the proxy stop at once on a step-down instead of when its window
// runs out (sqlproxy/doc.go, "One hop").
//
// Changes come from the lease's own notifications (role, master, epoch:
// a step-down is published before its entry is proposed), from the
// node's (serving after a promotion, UNSAFE, MariaDB up or down:
// Node.ctl.changed), and from the log: the lease version and the
// members change only when an entry is applied, so a watcher looks
// after each applied entry, but at most once per watchCheckInterval
// (under load entries come hundreds of times a second). A look is a few
// atomic loads and one mutex, no Status built, no message sent. An idle
// node's watchers so wake for the lease's renewals and the keepalive,
// not 40 times a second each as with the old fixed tick.

const (
	// watchCheckInterval bounds how late a proxy hears of a new lease
	// version or members: the old poll's 50 ms, halved.
	watchCheckInterval = 25 * time.Millisecond
	defaultKeepalive   = time.Second
	minKeepalive       = 100 * time.Millisecond
)

// watchKey is what a proxy's view depends on; a change is pushed.
type watchKey struct {
	role            masterlease.Role
	ready, serving  bool
	master          uint32
	epoch, version  uint64
	unsafe, mysqlUp bool
	membersAt       uint64 // log index of the members' change
	members         int
}

func (n *Node) watchKey(ls masterlease.Status) watchKey {
	m, _ := n.px.Membership()
	return watchKey{role: ls.Role, ready: ls.Ready, serving: n.serving(), master: ls.State.Master,
		epoch: ls.State.Epoch, version: ls.State.Version, unsafe: n.unsafe.Load() != nil,
		mysqlUp: n.mysqlUp.Load(), membersAt: m.Index, members: len(m.Members)}
}

func (a *adminServer) WatchStatus(req *pb.WatchStatusRequest, stream pb.Admin_WatchStatusServer) error {
	n := a.n
	wm := watchMetricsFor(n.m.reg)
	wm.watchers.Inc()
	defer wm.watchers.Dec()
	keep := time.Duration(req.KeepaliveMs) * time.Millisecond
	if keep == 0 {
		keep = defaultKeepalive
	}
	keep = max(keep, minKeepalive)

	ch, cancel := n.lease.Watch()
	defer cancel()
	t := time.NewTimer(keep)
	defer t.Stop()
	var last watchKey
	var sentAt, lookedAt time.Time
	send := func(k watchKey, reason string) error {
		last, sentAt = k, time.Now()
		wm.pushes.WithLabelValues(reason).Inc()
		return stream.Send(n.Status())
	}
	// Both channels are taken before the look they follow, so a change
	// during the look wakes the next wait.
	changed, applied := n.ctl.changed.wait(), n.px.AppliedCh()
	if err := send(n.watchKey(<-ch), "first"); err != nil {
		return err
	}
	logDue := false // the log moved within watchCheckInterval of the last look
	for {
		// After the log moved, the next look waits out the rest of
		// watchCheckInterval since the last one (the timer), rather than
		// follow every applied entry.
		logCh := applied
		wait := time.Until(sentAt.Add(keep))
		if logDue {
			logCh = nil
			wait = min(wait, watchCheckInterval-time.Since(lookedAt))
		}
		t.Reset(max(wait, 0))
		var ls masterlease.Status
		select {
		case <-stream.Context().Done():
			return nil
		case ls = <-ch:
		case <-changed:
			ls = n.lease.Status()
		case <-logCh:
			if time.Since(lookedAt) < watchCheckInterval {
				logDue = true
				continue
			}
			ls = n.lease.Status()
		case <-t.C:
			ls = n.lease.Status()
		}
		logDue = false
		lookedAt = time.Now()
		changed, applied = n.ctl.changed.wait(), n.px.AppliedCh()
		k := n.watchKey(ls)
		var err error
		switch {
		case k != last:
			err = send(k, "change")
		case time.Since(sentAt) >= keep:
			err = send(k, "keepalive")
		}
		if err != nil {
			return err
		}
	}
}

type watchMetrics struct {
	watchers prometheus.Gauge
	pushes   *prometheus.CounterVec
}

var watchMetricsByReg sync.Map // *prometheus.Registry -> *watchMetrics; beside Node so node.go stays as it is

func watchMetricsFor(reg *prometheus.Registry) *watchMetrics {
	if v, ok := watchMetricsByReg.Load(reg); ok {
		return v.(*watchMetrics)
	}
	wm := &watchMetrics{
		watchers: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "phxgo", Subsystem: "binlogd", Name: "status_watchers",
			Help: "open Admin/WatchStatus streams (one per proxy of this node)"}),
		pushes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "phxgo", Subsystem: "binlogd", Name: "status_pushes_total",
			Help: "statuses pushed on Admin/WatchStatus, by reason (first, change, keepalive)"}, []string{"reason"}),
	}
	v, loaded := watchMetricsByReg.LoadOrStore(reg, wm)
	if !loaded && reg != nil {
		reg.MustRegister(wm.watchers, wm.pushes)
	}
	return v.(*watchMetrics)
}
