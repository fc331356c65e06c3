package rolectl

import (
	"fmt"
	"time"
)

// Timings the driver uses when it carries out actions. They are named here,
// next to the table that decides when each action runs.
const (
	// TickInterval: how often the driver observes the lease even without
	// a change notification (the own deadline passes silently).
	TickInterval = 50 * time.Millisecond
	// RepointInterval: how often a replica's replication is re-asserted.
	RepointInterval = 2 * time.Second
	// PromoteTimeout bounds the statements that open writes.
	PromoteTimeout = 10 * time.Second
	// SQLTimeout bounds one quick statement (read_only, a status read).
	SQLTimeout = 2 * time.Second
	// FenceTimeout bounds a Fence proposal.
	FenceTimeout = 5 * time.Second
	// CaptureStopTimeout: how long a stepping-down master waits for its
	// capture to return.
	CaptureStopTimeout = 5 * time.Second
	// DrainTimeout: how long a master shutting down lets waiting commits
	// be acknowledged before it fences its term.
	DrainTimeout = 3 * time.Second
	// BarrierWait: how long read_only on may wait for commits in flight
	// before MariaDB gives up (lock_wait_timeout; role.ReadOnlyBarrier).
	BarrierWait = 2 * time.Second
	// QuietTimeout bounds CheckQuiet and Release (the barrier, a count, a
	// GTID lookup in the log).
	QuietTimeout = 10 * time.Second
	// ShutdownTimeout bounds the whole safe stop.
	ShutdownTimeout = 30 * time.Second
	// GracefulStopTimeout: how long mariadbd gets to stop after SIGTERM
	// (then SIGKILL).
	GracefulStopTimeout = 60 * time.Second
)

// Server ids binlogd derives from its node id: MariaDB's own server_id is
// the node id; capture and the replication endpoint register with ids in
// ranges of their own, so they never collide with any member's MariaDB
// (two connections with one server_id froze a 10.11 server, DESIGN.md).
const (
	CaptureServerIDBase  = 1000
	EndpointServerIDBase = 2000
)

// CaptureServerID is the server_id capture registers with on node id.
func CaptureServerID(id uint32) uint32 { return CaptureServerIDBase + id }

// EndpointServerID is the server_id of node id's replication endpoint.
func EndpointServerID(id uint32) uint32 { return EndpointServerIDBase + id }

// Phase is what the controller has made of its MariaDB.
type Phase uint8

const (
	// Replica: read_only, replicating from the node's own endpoint, with
	// relaxed durability (the log is its durability).
	Replica Phase = iota + 1
	// Master: durable, writable for Epoch, capture running (or starting).
	Master
	// Stopped: the node is shutting down; nothing changes MariaDB's role
	// any more.
	Stopped
)

func (p Phase) String() string {
	switch p {
	case Replica:
		return "replica"
	case Master:
		return "master"
	case Stopped:
		return "stopped"
	}
	return "unknown"
}

// Obs is what the driver observed of the world at one instant.
type Obs struct {
	// LeaseMaster: this node holds a valid lease and the lease says ready
	// (masterlease.RoleMaster) for LeaseEpoch.
	LeaseMaster bool
	LeaseEpoch  uint64
	// CaughtUp: MariaDB applied the log's last valid GTID.
	CaughtUp bool
	MySQLUp  bool
	Unsafe   bool
	Stopping bool
}

// State is the controller's whole state. The zero State is not valid; use
// Initial.
type State struct {
	Phase Phase
	// Epoch is the term being served; meaningful in Master only.
	Epoch uint64
	// Obs is the newest observation.
	Obs Obs
	// Supervise: binlogd runs mariadbd (and so stops it at shutdown).
	Supervise bool
	// ServedWrites: this process made MariaDB writable at least once, so a
	// stop with an unknown number of waiting commits must be a kill.
	ServedWrites bool
	// Handoff: the stop leaves MariaDB running for the next binlogd
	// (Shutdown.Handoff, granted to a replica only).
	Handoff bool
	// Armed: MariaDB's semi-sync master may be on with commits of a term
	// this node served. Set by a promotion; cleared only by a Release that
	// proved the server quiet, or by a Kill (the server restarts with it
	// off). While armed, semi-sync never goes off by KeepReplica, and
	// MariaDB is never stopped gracefully or handed off without CheckQuiet.
	Armed bool
}

// Initial is the state at start: a replica that has observed nothing.
func Initial(supervise bool) State { return State{Phase: Replica, Supervise: supervise} }

func (s State) String() string {
	if s.Phase == Master {
		return fmt.Sprintf("master(epoch %d)", s.Epoch)
	}
	return s.Phase.String()
}

// Kind names an action.
type Kind uint8

const (
	// LeadPaxos: campaign for Paxos leadership in the background.
	LeadPaxos Kind = iota + 1
	// MakeDurable: sync_binlog=1, innodb_flush_log_at_trx_commit=1 and a
	// flush of the binlog and the redo log, so everything applied as a
	// relaxed replica is on disk. Always before OpenWrites.
	MakeDurable
	// OpenWrites: stop replication, semi-sync master on, read_only off,
	// then check the settings capture relies on.
	OpenWrites
	// StartCapture: start capture for Epoch.
	StartCapture
	// SetReadOnly: read_only on.
	SetReadOnly
	// StopCapture: stop capture and wait for it (CaptureStopTimeout).
	StopCapture
	// CountWaiting: count commits waiting for a semi-sync ACK; the driver
	// answers with a Waiting event for Purpose.
	CountWaiting
	// Kill: SIGKILL mariadbd (waiting commits must never commit).
	Kill
	// Fence: end this node's term in the log.
	Fence
	// MarkUnsafe: the node gives up the lease for good (Why).
	MarkUnsafe
	// KeepReplica: point replication at the node's own endpoint (if it
	// is not already) and relax durability.
	KeepReplica
	// AwaitDrained: wait up to DrainTimeout for waiting commits to be
	// acknowledged.
	AwaitDrained
	// GracefulStop: STOP SLAVE and SIGTERM mariadbd.
	GracefulStop
	// Handoff: leave mariadbd running for the next binlogd: a read-only
	// replica of the node's own endpoint, recorded (pid, start time,
	// datadir, server id, port) so that the next start can tell it is the
	// same server before it adopts it. If the record cannot be made, the
	// driver stops MariaDB gracefully instead (the count was zero).
	Handoff
	// CheckQuiet: prove that a MariaDB that served writes holds no commit
	// the log lacks: read_only on by a change that completed (a barrier:
	// no commit in flight, none can start), no session waiting for an
	// ACK, gtid_binlog_pos held by the log. The driver answers Quiet. A
	// count alone is not enough: a commit past its read_only check but not
	// yet in the semi-sync wait is not counted (doc.go).
	CheckQuiet
	// Release: CheckQuiet's checks, then semi-sync master off, in one
	// action; the driver answers Released. The only way semi-sync goes
	// off on an armed server (off, it releases waiting commits with OK).
	Release
)

var kindNames = [...]string{
	LeadPaxos: "lead_paxos", MakeDurable: "make_durable", OpenWrites: "open_writes", StartCapture: "start_capture",
	SetReadOnly: "read_only", StopCapture: "stop_capture", CountWaiting: "count_waiting", Kill: "kill",
	Fence: "fence", MarkUnsafe: "mark_unsafe", KeepReplica: "keep_replica", AwaitDrained: "await_drained",
	GracefulStop: "graceful_stop", Handoff: "handoff", CheckQuiet: "check_quiet", Release: "release",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Purpose says why waiting commits are counted.
type Purpose uint8

const (
	// ForDemote: a master stepped down; kill if any wait.
	ForDemote Purpose = iota + 1
	// ForShutdown: the node stops; kill if any wait, else stop gracefully.
	ForShutdown
)

// Action is one effect for the driver to carry out, in order.
type Action struct {
	Kind    Kind
	Epoch   uint64  // StartCapture, Fence (informational)
	Purpose Purpose // CountWaiting, CheckQuiet
	Why     string  // MarkUnsafe, Kill; logged
}

func (a Action) String() string {
	switch a.Kind {
	case StartCapture:
		return fmt.Sprintf("%s(%d)", a.Kind, a.Epoch)
	case CountWaiting, CheckQuiet:
		return fmt.Sprintf("%s(%d)", a.Kind, a.Purpose)
	}
	return a.Kind.String()
}
