package topology

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "phxgo/proto"
)

// Admin follows the local binlogd's Status, pushed on Admin.WatchStatus
// (polled with Admin.Status from a binlogd without it), and keeps a read
// window (window.go); each change becomes a View.
//
// Nothing in a status extends how long this node may serve: a pushed
// message's age is unknown. The master node's own lease deadline is its
// read window's end (t0 before the request + granted - drift margin), and
// the master's binlogd waits every window out before it ends its term
// early. The status only makes the view stop at once on a step-down.
type Admin struct {
	Notifier
	client   pb.AdminClient
	interval time.Duration
	log      *slog.Logger
	self     atomic.Uint32
	ready    chan struct{}
	readyOne sync.Once

	mu   sync.Mutex // serializes publishing base + win
	base View       // from the last status
	win  Window     // the last read window granted (window.go)
}

// keepalive is what Admin asks binlogd for on WatchStatus; a stream
// silent for watchSilence is taken as dead and opened again.
const (
	keepalive    = time.Second
	watchSilence = 3 * keepalive
)

// NewAdmin follows client's status until ctx ends. interval (default
// 50ms) is the Status poll of the fallback for a binlogd without
// WatchStatus, the pause before a broken stream is opened again, and the
// retry rate of a refused read window. Until the first status the view is
// empty (no master).
func NewAdmin(ctx context.Context, client pb.AdminClient, interval time.Duration, log *slog.Logger) *Admin {
	if interval <= 0 {
		interval = 50 * time.Millisecond
	}
	if log == nil {
		log = slog.Default()
	}
	a := &Admin{client: client, interval: interval, log: log, ready: make(chan struct{})}
	a.Set(View{})
	go a.run(ctx)
	go a.windowLoop(ctx)
	return a
}

// Self is this node's id (0 until the first answer).
func (a *Admin) Self() uint32 { return a.self.Load() }

// Ready is closed after the first status.
func (a *Admin) Ready() <-chan struct{} { return a.ready }

// run follows the stream, opening it again when it breaks; a binlogd that
// does not know WatchStatus is polled instead.
func (a *Admin) run(ctx context.Context) {
	failing := false
	for ctx.Err() == nil {
		got, err := a.watch(ctx)
		if ctx.Err() != nil {
			return
		}
		if status.Code(err) == codes.Unimplemented {
			a.log.Info("sqlproxy: binlogd has no WatchStatus; polling its Status", "interval", a.interval)
			a.poll(ctx)
			return
		}
		if got {
			failing = false
		}
		if !failing {
			// The view stays: its lease is a window that only runs out.
			a.log.Warn("sqlproxy: binlogd status stream broken; opening it again", "err", err)
			failing = true
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(a.interval):
		}
	}
}

// watch reads one WatchStatus stream until it fails; got says whether it
// delivered anything.
func (a *Admin) watch(ctx context.Context) (got bool, err error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// A binlogd that is paused or cut off sends nothing, not an error.
	silent := time.AfterFunc(watchSilence, cancel)
	defer silent.Stop()
	stream, err := a.client.WatchStatus(wctx, &pb.WatchStatusRequest{KeepaliveMs: uint32(keepalive / time.Millisecond)})
	if err != nil {
		return false, err
	}
	for {
		st, err := stream.Recv()
		if err != nil {
			if wctx.Err() != nil && ctx.Err() == nil {
				err = fmt.Errorf("no status for %v: %w", watchSilence, err)
			}
			return got, err
		}
		silent.Reset(watchSilence)
		got = true
		a.apply(st)
	}
}

// poll asks Status every interval (a binlogd older than WatchStatus).
func (a *Admin) poll(ctx context.Context) {
	t := time.NewTicker(a.interval)
	defer t.Stop()
	failing := false
	for {
		rctx, cancel := context.WithTimeout(ctx, 2*a.interval+time.Second)
		st, err := a.client.Status(rctx, &pb.StatusRequest{})
		cancel()
		if err != nil {
			if !failing {
				a.log.Warn("sqlproxy: binlogd status failed", "err", err)
				failing = true
			}
		} else {
			failing = false
			a.apply(st)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// apply publishes what status st changes.
func (a *Admin) apply(st *pb.NodeStatus) {
	a.self.Store(st.NodeId)
	a.setBase(FromStatus(st))
	a.readyOne.Do(func() { close(a.ready) })
}

// setBase publishes v (if it differs from the last) with the read window.
func (a *Admin) setBase(v View) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if sameView(v, a.base) {
		return
	}
	a.base = v
	a.publishLocked()
}

// sameView: a status that changes nothing is not published (sessions
// waiting for a change would wake for nothing).
func sameView(a, b View) bool { return reflect.DeepEqual(a, b) }

// FromStatus converts a NodeStatus. It sets no lease deadline: that comes
// only from a read window (publishLocked). Every member with MariaDB but
// the master is a read replica, learners included (they apply the same
// valid log; health.go's lag checks judge them like any replica); a
// witness has no MariaDB and never is.
func FromStatus(st *pb.NodeStatus) View {
	v := View{MasterID: st.MasterId, Ready: st.Ready}
	for _, m := range st.Members {
		switch {
		case m.Id == st.NodeId:
			v.SelfMySQLAddr = m.MysqlAddr
		}
		if m.Id == st.MasterId {
			v.MasterProxyAddr, v.MasterMySQLAddr = m.ProxyAddr, m.MysqlAddr
		} else if !m.Witness { // a witness has no MariaDB to read from
			v.Replicas = append(v.Replicas, Replica{ID: m.Id, MySQLAddr: m.MysqlAddr})
		}
	}
	v.IsMaster = st.Role == pb.Role_ROLE_MASTER && st.MasterId == st.NodeId && st.Ready && st.LeaseRemainingNs > 0
	return v
}
