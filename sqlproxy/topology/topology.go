package topology

import (
	"sync"
	"sync/atomic"
	"time"
)

// Replica is a node the proxy may send reads to.
type Replica struct {
	ID        uint32
	MySQLAddr string
}

// View is the proxy's picture of the cluster at one moment.
type View struct {
	MasterID        uint32 // 0: no master known
	MasterProxyAddr string // the master node's sqlproxy (linearizable port)
	MasterMySQLAddr string // the master node's MariaDB
	SelfMySQLAddr   string // this node's MariaDB
	// IsMaster: this node holds the lease and serves writes (ready).
	IsMaster bool
	// LeaseDeadline is this node's own lease deadline on the local
	// monotonic clock; zero unless IsMaster. The proxy forwards to its
	// MariaDB only while time.Now() is before it.
	LeaseDeadline time.Time
	Ready         bool
	Replicas      []Replica // other nodes' MariaDBs (not the master)
	// Window is the read window the master lent this non-master proxy
	// (window.go); zero when none.
	Window Window
}

// LeaseValid reports whether this node may serve a statement at now.
func (v View) LeaseValid(now time.Time) bool {
	return v.IsMaster && v.Ready && now.Before(v.LeaseDeadline)
}

// Topology is what the proxy needs to know, refreshed continuously.
type Topology interface {
	Self() uint32
	View() View
	// Changed returns a channel closed on the next change of View.
	Changed() <-chan struct{}
}

// Notifier holds a View and wakes waiters when it changes. Static and
// Admin are built on it; tests use Static.Set to change the cluster.
// View and Changed are lock-free (one atomic load): the proxy calls them
// for every statement.
type Notifier struct {
	mu  sync.Mutex // serializes Set
	cur atomic.Pointer[snapshot]
}

// snapshot is one published view and the channel closed when it is replaced.
type snapshot struct {
	view    View
	changed chan struct{}
}

func (n *Notifier) load() *snapshot {
	if sn := n.cur.Load(); sn != nil {
		return sn
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cur.Load() == nil {
		n.cur.Store(&snapshot{changed: make(chan struct{})})
	}
	return n.cur.Load()
}

// View returns the current view.
func (n *Notifier) View() View { return n.load().view }

// Changed returns a channel closed at the next Set.
func (n *Notifier) Changed() <-chan struct{} { return n.load().changed }

// Set replaces the view and wakes waiters.
func (n *Notifier) Set(v View) {
	n.load() // initialized
	n.mu.Lock()
	defer n.mu.Unlock()
	old := n.cur.Load()
	n.cur.Store(&snapshot{view: v, changed: make(chan struct{})})
	close(old.changed)
}

// Static is a Topology set by hand (tests, or a fixed single node).
type Static struct {
	Notifier
	ID uint32
}

// NewStatic returns a Static topology with an initial view.
func NewStatic(self uint32, v View) *Static {
	s := &Static{ID: self}
	s.Set(v)
	return s
}

// Self returns this node's id.
func (s *Static) Self() uint32 { return s.ID }
