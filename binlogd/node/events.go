package node

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"phxgo/binlogd/events"
	"phxgo/masterlease"
	pb "phxgo/proto"
)

// Events (binlogd/events): the node publishes what an operator wants to
// hear about. Role changes, stepping down and fences come from the role
// driver (roles.go) as it acts, a switchover from the Switchover RPC
// (admin.go), recovery cuts from recovery (mysql.go); changes of the lease
// master by noteLease; of the members and the UNSAFE/RESEED states by
// watchEvents, which looks at the node every
// eventsCheckEvery (the states are set in several places; watching
// them keeps those places unchanged). Failover versus switchover is told
// by the role loop itself (noteLease), so that became_master, published
// when capture starts, already knows it.

var eventBuses sync.Map // *Node -> *events.Bus; beside Node so node.go stays as it is

// events returns the node's Bus, made on first use.
func (n *Node) events() *events.Bus {
	if v, ok := eventBuses.Load(n); ok {
		return v.(*events.Bus)
	}
	return n.startEvents(nil)
}

// startEvents makes the node's Bus with its hook and registers its
// metrics on reg (newMetrics, through registerRoleMetrics).
func (n *Node) startEvents(reg prometheus.Registerer) *events.Bus {
	var hook *events.HookConfig
	if len(n.cfg.EventHook) > 0 {
		hook = &events.HookConfig{Argv: n.cfg.EventHook, Timeout: n.cfg.EventHookTimeout.Duration}
	}
	b := events.New(events.Options{Node: n.cfg.ID, Logger: n.log, Hook: hook, Registerer: reg})
	v, loaded := eventBuses.LoadOrStore(n, b)
	if loaded {
		b.Close()
	}
	return v.(*events.Bus)
}

// publish records an event with the lease's epoch and master now;
// details are key, value pairs.
func (n *Node) publish(kind events.Kind, details ...any) {
	ev := events.Event{Kind: kind, Details: map[string]string{}}
	if n.lease != nil {
		st := n.lease.State()
		ev.Epoch, ev.Master = st.Epoch, st.Master
	}
	for i := 0; i+1 < len(details); i += 2 {
		ev.Details[fmt.Sprint(details[i])] = fmt.Sprint(details[i+1])
	}
	n.events().Publish(ev)
}

// masterChange is how the current master got its term, as this node saw it.
type masterChange struct {
	previous uint32 // 0: none seen since this process started
	cause    string // "switchover", "failover" or "initial"
}

// leaseTracker follows the lease master as the role loop sees it, to tell
// a failover (the new grant came after the previous master's lease ran
// out here) from a switchover (it came while that lease still ran: the
// previous master handed it over).
type leaseTracker struct {
	mu         sync.Mutex
	seen       bool
	master     uint32 // current, 0 for none
	lastMaster uint32 // last non-zero
	termEpoch  uint64 // the epoch lastMaster's term began with
	held       bool   // this node held the lease in that term (lastMaster is this node)
	expiry     time.Time
	change     masterChange
}

// noteLease is called by the role loop with every lease status, before
// the role controller acts on it.
func (n *Node) noteLease(st masterlease.Status) {
	t := &n.ctl.lt
	t.mu.Lock()
	defer t.mu.Unlock()
	first := !t.seen
	if c, ok := t.note(st, n.cfg.ID); ok {
		m := st.State.Master
		if first {
			defer n.publish(events.BecameReplica, "replica_of", m, "cause", c.cause)
		} else {
			defer n.publish(events.BecameReplica, "replica_of", m, "previous", c.previous, "cause", c.cause)
		}
	}
}

// note records st and reports a new master term another node than self
// holds (ok: this node became its replica). t.mu is held.
//
// A new term of this node after a term in which it held the lease
// counts too: its lease ran out (or it fenced itself) with no other node
// taking over, and it took the lease again. That is a failover from
// itself, not its first term: before, such a master's became_master said
// "initial" with no previous master. A term it never held is not one it
// fails over from: a switchover grants the lease to the target, which
// holds no deadline from a grant it did not propose and so takes a term
// of its own right after (TestStopMasterHandsOver).
func (t *leaseTracker) note(st masterlease.Status, self uint32) (c masterChange, ok bool) {
	m, epoch := st.State.Master, st.State.Epoch
	switch {
	case !t.seen:
		t.seen, t.change = true, masterChange{cause: "initial"}
		ok = m != 0 && m != self
	case m != 0 && m != t.master && m != t.lastMaster:
		c := masterChange{previous: t.lastMaster, cause: "failover"}
		if t.lastMaster == 0 {
			c.cause = "initial"
		} else if t.master == t.lastMaster && time.Now().Before(t.expiry) {
			c.cause = "switchover"
		}
		t.change = c
		ok = m != self
	case m == self && m == t.lastMaster && epoch != t.termEpoch && t.held:
		t.change = masterChange{previous: m, cause: "failover"}
	}
	t.master = m
	if m != 0 {
		if epoch != t.termEpoch {
			t.held = false
		}
		t.lastMaster, t.termEpoch = m, epoch
	}
	if m == self && !st.Deadline.IsZero() {
		t.held = true
	}
	if m != self {
		t.expiry = st.FollowerExpiry
	}
	return t.change, ok
}

func (n *Node) lastMasterChange() masterChange {
	t := &n.ctl.lt
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.change
}

// watchEvents publishes the changes that have no single place in the
// code: membership, UNSAFE and RESEED. They are news for operators, not
// inputs to any decision, so it looks every eventsCheckEvery rather than
// on the role loop's old 50 ms tick, and rebuilds the member list only
// when the log's membership changed.
func (n *Node) watchEvents(ctx context.Context) {
	t := time.NewTicker(eventsCheckEvery)
	defer t.Stop()
	var (
		members         string
		membersAt       uint64
		unsafe          string
		reseed          bool
		lastReseedCheck time.Time
	)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if m, _ := n.px.Membership(); members == "" || m.Index != membersAt {
			membersAt = m.Index
			ids := memberIDs(n)
			if members != "" && ids != members {
				n.publish(events.MembershipChange, "members", ids, "before", members)
			}
			members = ids
		}

		u := ""
		if r := n.unsafe.Load(); r != nil {
			u = *r
		}
		if u != unsafe && u != "" {
			n.publish(events.Unsafe, "reason", u)
		}
		unsafe = u

		if now := time.Now(); now.Sub(lastReseedCheck) >= 2*time.Second { // px.Base decodes a snapshot: not every tick
			lastReseedCheck = now
			var ps pb.NodeStatus
			n.retentionStatus(&ps)
			if ps.ReseedNeeded && !reseed {
				n.publish(events.Reseed, "reason", "MariaDB is behind the log's first GTID "+ps.FirstGtid+"; run `binlogd reseed`")
			}
			reseed = ps.ReseedNeeded
		}
	}
}

// eventsCheckEvery is how late a membership change or UNSAFE shows in
// the event stream at most.
const eventsCheckEvery = 500 * time.Millisecond

func memberIDs(n *Node) string {
	ms := n.members()
	ids := make([]int, len(ms))
	for i, m := range ms {
		ids[i] = int(m.ID)
	}
	sort.Ints(ids)
	return strings.Trim(fmt.Sprint(ids), "[]")
}

// Events streams the recent events, then live ones (proto/admin.proto).
func (a *adminServer) Events(req *pb.EventsRequest, ss pb.Admin_EventsServer) error {
	recent, sub := a.n.events().Subscribe()
	defer sub.Close()
	for _, ev := range recent {
		if err := ss.Send(eventPB(ev)); err != nil {
			return err
		}
	}
	if req.RecentOnly {
		return nil
	}
	for {
		select {
		case <-ss.Context().Done():
			return ss.Context().Err()
		case ev, ok := <-sub.C():
			if !ok {
				return status.Error(codes.ResourceExhausted, sub.Err().Error())
			}
			if err := ss.Send(eventPB(ev)); err != nil {
				return err
			}
		}
	}
}

func eventPB(ev events.Event) *pb.Event {
	return &pb.Event{Seq: ev.Seq, TimeUnixNano: ev.Time.UnixNano(), Node: ev.Node, Kind: string(ev.Kind),
		Epoch: ev.Epoch, Master: ev.Master, Details: ev.Details}
}

// EventFromPB is the inverse of eventPB, for clients (`binlogd events`).
func EventFromPB(p *pb.Event) events.Event {
	return events.Event{Seq: p.Seq, Time: time.Unix(0, p.TimeUnixNano).UTC(), Node: p.Node, Kind: events.Kind(p.Kind),
		Epoch: p.Epoch, Master: p.Master, Details: p.Details}
}
