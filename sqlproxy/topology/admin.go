package topology

import (
	"context"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	pb "phxgo/proto"
)

// Admin polls the local binlogd's Admin.Status and turns each answer into
// a View. The master's lease deadline is taken conservatively: the time
// the request was SENT plus lease_remaining_ns, so the network and
// scheduling delay only shorten it.
type Admin struct {
	Notifier
	client   pb.AdminClient
	interval time.Duration
	log      *slog.Logger
	self     atomic.Uint32
	ready    chan struct{}

	mu   sync.Mutex // serializes publishing base + win
	base View       // from the last Status
	win  Window     // the last read window granted (window.go)
}

// NewAdmin starts polling client every interval (default 50ms) until ctx
// ends. Until the first answer the view is empty (no master).
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

// Ready is closed after the first successful Status.
func (a *Admin) Ready() <-chan struct{} { return a.ready }

func (a *Admin) run(ctx context.Context) {
	t := time.NewTicker(a.interval)
	defer t.Stop()
	var last View
	first, failing := true, false
	for {
		sent := time.Now()
		rctx, cancel := context.WithTimeout(ctx, 2*a.interval+time.Second)
		st, err := a.client.Status(rctx, &pb.StatusRequest{})
		cancel()
		if err != nil {
			if !failing {
				a.log.Warn("sqlproxy: binlogd status failed", "err", err)
				failing = true
			}
			// Without fresh news this node cannot vouch for its lease:
			// keep the deadline we had (it only runs out) and the rest.
		} else {
			failing = false
			a.self.Store(st.NodeId)
			v := FromStatus(st, sent)
			if first || !sameView(v, last) {
				a.setBase(v)
				last = v
			}
			if first {
				close(a.ready)
				first = false
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// setBase publishes v with the current read window.
func (a *Admin) setBase(v View) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.base = v
	v.Window = a.windowFor(v)
	a.Set(v)
}

// sameView ignores the lease deadline's renewal drift only when neither
// side is master; a renewed deadline is a change worth publishing.
func sameView(a, b View) bool { return reflect.DeepEqual(a, b) }

// FromStatus converts a NodeStatus received for a request sent at sent.
func FromStatus(st *pb.NodeStatus, sent time.Time) View {
	v := View{MasterID: st.MasterId, Ready: st.Ready}
	for _, m := range st.Members {
		switch {
		case m.Id == st.NodeId:
			v.SelfMySQLAddr = m.MysqlAddr
		}
		if m.Id == st.MasterId {
			v.MasterProxyAddr, v.MasterMySQLAddr = m.ProxyAddr, m.MysqlAddr
		} else {
			v.Replicas = append(v.Replicas, Replica{ID: m.Id, MySQLAddr: m.MysqlAddr})
		}
	}
	if st.Role == pb.Role_ROLE_MASTER && st.MasterId == st.NodeId && st.LeaseRemainingNs > 0 {
		v.IsMaster = true
		v.LeaseDeadline = sent.Add(time.Duration(st.LeaseRemainingNs))
	}
	return v
}
