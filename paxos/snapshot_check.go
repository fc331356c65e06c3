package paxos

import "slices"

// SnapshotChecker is an optional interface of a StateMachine. A peer's
// MsgSnapshot is made durable before it is restored (snapshot_install.go),
// so a snapshot whose state-machine part does not Restore would stop the
// node, and stop it again at every restart. The core checks the engine's
// part (its dedup table); a StateMachine that implements CheckSnapshot
// lets the node check the rest before the core sees the message: one that
// fails is dropped (DropMalformed) like any malformed peer message.
type SnapshotChecker interface {
	// CheckSnapshot reports whether snap, made by Snapshot on a peer,
	// would Restore. It must not touch the state machine's state: it runs
	// on the node's run loop, beside Apply.
	CheckSnapshot(snap []byte) error
}

// checkSnapshots drops the peer snapshots in ms that the state machine
// refuses (run loop); the rest go to the core.
func (n *Node) checkSnapshots(ms []Message) []Message {
	chk, ok := n.app.sm.(SnapshotChecker)
	if !ok || !slices.ContainsFunc(ms, func(m Message) bool { return m.Type == MsgSnapshot }) {
		return ms
	}
	out := make([]Message, 0, len(ms))
	for i := range ms {
		m := &ms[i]
		if m.Type == MsgSnapshot && len(m.Snapshot) > 0 {
			rest, err := (&applier{nodes: make(map[uint32]*seqSet)}).decodeTable(m.Snapshot)
			if err == nil {
				err = chk.CheckSnapshot(rest)
			}
			if err != nil {
				n.rn.Reject(m, badMsg(DropMalformed, "snapshot at %d: %v", m.Index, err))
				continue
			}
		}
		out = append(out, *m)
	}
	return out
}
