package events

import "time"

// Kind names what happened. The values are stable: hooks and dashboards
// match on them.
type Kind string

const (
	// BecameMaster: this node serves writes (details: after = the GTID it starts from).
	BecameMaster Kind = "became_master"
	// BecameReplica: this node follows a master (the lease names Master).
	BecameReplica Kind = "became_replica"
	// SteppedDown: this node stopped serving writes (details: why).
	SteppedDown Kind = "stepped_down"
	// Failover: a new master took the lease after the previous one's lapsed
	// (details: previous). Published by the new master.
	Failover Kind = "failover"
	// Switchover: the lease was handed over on request (details: from, to).
	Switchover Kind = "switchover"
	// Fence: this node ended a term in the log (details: why, err).
	Fence Kind = "fence"
	// MembershipChange: a member was added or removed (details: op, id).
	MembershipChange Kind = "membership_change"
	// RecoveryCut: at a restart, transactions of the local binlog the log
	// never chose were cut (details: cut = how many, keep = GTID kept).
	RecoveryCut Kind = "recovery_cut"
	// Unsafe: this node refuses to serve (details: reason).
	Unsafe Kind = "unsafe"
	// Reseed: this node needs (or is getting) a fresh copy (details: reason).
	Reseed Kind = "reseed"
)

// Kinds lists every Kind, for metrics that should show zeros.
var Kinds = []Kind{BecameMaster, BecameReplica, SteppedDown, Failover, Switchover, Fence,
	MembershipChange, RecoveryCut, Unsafe, Reseed}

// Event is one thing that happened, as the log, the stream and the hook
// show it.
type Event struct {
	Seq     uint64            `json:"seq"` // per node, from 1; set by Publish
	Time    time.Time         `json:"time"`
	Node    uint32            `json:"node"` // the node that saw it
	Kind    Kind              `json:"kind"`
	Epoch   uint64            `json:"epoch"`  // lease epoch at the time (0: unknown)
	Master  uint32            `json:"master"` // lease master at the time (0: none/unknown)
	Details map[string]string `json:"details,omitempty"`
}
