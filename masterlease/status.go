package masterlease

import (
	"sync"
	"time"
)

// Role is this node's part in the current term, by its own clock.
type Role uint8

const (
	// RoleReplica: this node does not hold a valid lease.
	RoleReplica Role = iota + 1
	// RoleCandidate: it holds a valid lease but its MariaDB has not yet
	// applied every valid batch before the term; it must not serve writes.
	RoleCandidate
	// RoleMaster: it holds a valid lease and is caught up: serve writes.
	RoleMaster
)

func (r Role) String() string {
	switch r {
	case RoleReplica:
		return "replica"
	case RoleCandidate:
		return "candidate"
	case RoleMaster:
		return "master"
	}
	return "unknown"
}

// Status is a node's view at one instant.
type Status struct {
	ID   uint32
	Role Role
	// State is the replicated state as applied here: Master, Version,
	// Epoch, LastGTID (the valid GTID position), Applied (log index).
	State State
	// Deadline is this node's own lease deadline, zero when it does not
	// hold a valid lease. Compare it with the Lease's clock only.
	Deadline time.Time
	// Ready: holder and caught up (Role == RoleMaster).
	Ready bool
	// CatchUpIndex: as holder, MarkCaughtUp(i) with i >= CatchUpIndex
	// makes it ready (the last valid batch before its term began).
	CatchUpIndex uint64
	// FollowerExpiry: when this node, as a follower, considers the
	// current lease expired (zero: already, e.g. after a self-Fence).
	FollowerExpiry time.Time
}

// statusKey is what a change notification is about.
type statusKey struct {
	role   Role
	master uint32
	epoch  uint64
}

// Status returns this node's current view.
func (l *Lease) Status() Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.statusLocked(l.clock.Now())
}

func (l *Lease) statusLocked(now time.Time) Status {
	s := Status{ID: l.id, Role: RoleReplica, State: l.st, FollowerExpiry: l.followerExpiry}
	if dl := l.deadlineLocked(now); !dl.IsZero() {
		s.Deadline = dl
		s.CatchUpIndex = l.own.needIndex
		s.Ready = l.caughtUp >= l.own.needIndex
		s.Role = RoleCandidate
		if s.Ready {
			s.Role = RoleMaster
		}
	}
	return s
}

func (l *Lease) deadlineLocked(now time.Time) time.Time {
	if l.st.Master != l.id || !l.own.deadline.After(now) {
		return time.Time{}
	}
	return l.own.deadline
}

// publishLocked notifies the watchers if role, master or epoch changed
// since the last notification. Holding l.mu keeps notifications in order.
func (l *Lease) publishLocked() {
	s := l.statusLocked(l.clock.Now())
	k := statusKey{s.Role, s.State.Master, s.State.Epoch}
	if k == l.lastSeen {
		return
	}
	l.lastSeen = k
	l.watchers.publish(s)
}

// notify publishes the status if it changed (e.g. the deadline passed).
func (l *Lease) notify() {
	l.mu.Lock()
	l.publishLocked()
	l.mu.Unlock()
}

// Deadline is this node's own lease deadline on its clock, or the zero
// time when it is not the master or its lease has expired. A master must
// stop serving (writes and linearizable reads) when Clock.Now() reaches it.
func (l *Lease) Deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadlineLocked(l.clock.Now())
}

// Ready reports whether this node holds a valid lease and its MariaDB has
// applied every valid batch before its term: it may serve writes.
func (l *Lease) Ready() bool { return l.Status().Ready }

// MarkCaughtUp tells the Lease that the local MariaDB has applied every
// valid batch at log index <= index. Calls with a lower index are ignored.
func (l *Lease) MarkCaughtUp(index uint64) {
	l.mu.Lock()
	if index > l.caughtUp {
		l.caughtUp = index
	}
	l.publishLocked()
	l.mu.Unlock()
}

// Watch returns a channel that receives this node's Status whenever its
// role, the master or the epoch changes (also when the own deadline passes,
// noticed by Run within RetryInterval). Only the newest status is kept:
// a slow reader skips intermediate ones. cancel stops the notifications.
func (l *Lease) Watch() (ch <-chan Status, cancel func()) {
	c := make(chan Status, 1)
	l.mu.Lock()
	c <- l.statusLocked(l.clock.Now())
	l.watchers.add(c)
	l.mu.Unlock()
	return c, func() { l.watchers.remove(c) }
}

type watchers struct {
	mu   sync.Mutex
	list []chan Status
}

func (w *watchers) add(c chan Status) {
	w.mu.Lock()
	w.list = append(w.list, c)
	w.mu.Unlock()
}

func (w *watchers) remove(c chan Status) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, x := range w.list {
		if x == c {
			w.list = append(w.list[:i], w.list[i+1:]...)
			return
		}
	}
}

// publish replaces any unread status in each channel with s.
func (w *watchers) publish(s Status) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.list {
		select {
		case <-c:
		default:
		}
		c <- s
	}
}

// Master returns the master of the current term (0: none) with the lease
// version and epoch, as applied on this node.
func (l *Lease) Master() (master uint32, version, epoch uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.st.Master, l.st.Version, l.st.Epoch
}

// Position returns the last valid GTID and the log index applied here.
func (l *Lease) Position() (last GTID, applied uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.st.LastGTID, l.st.Applied
}

// State returns a copy of the replicated state as applied on this node.
func (l *Lease) State() State {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.st
}
