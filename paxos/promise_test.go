package paxos

import (
	"bytes"
	"slices"
	"testing"
)

// TestPromiseLeavesOutWhatTheCandidateHolds: a Prepare lists the ballots
// of the entries the candidate holds, and a Promise carries only the
// entries the candidate lacks or holds under a lower ballot (4 MB
// Promises under 64 KiB commands outlasted the election timeout on a slow
// host, TestLargeCommandsUnderLoad under -race). The candidate still
// re-proposes, under its ballot, the value it lacked.
func TestPromiseLeavesOutWhatTheCandidateHolds(t *testing.T) {
	n, l := newLedNet(t)
	vc := []byte("c")
	// Nothing gets chosen (no vote reaches the leader), and node 2 misses
	// the Accept of "c".
	n.hold = func(m Message) bool {
		if m.Type == MsgAccepted && m.To == 1 {
			return true
		}
		return m.Type == MsgAccept && m.To == 2 && slices.ContainsFunc(m.Entries, func(e Entry) bool {
			cmds, _ := decodeValue(e.Value)
			return len(cmds) == 1 && bytes.Equal(cmds[0].Data, vc)
		})
	}
	for _, v := range []string{"a", "b", "c"} {
		l.propose([]byte(v), 0)
		l.flush = true // no linger: one value each
		l.maybePropose()
		n.settle()
	}
	// The spare (node 3) gets its entries once they are chosen, which
	// they never are here: the retransmits ask it to vote on them.
	for range 2 * l.cfg.RetransmitTicks {
		l.tickOnce()
		n.settle()
	}
	c2 := n.cores[2]
	idxC := uint64(0)
	for i, in := range n.cores[3].log {
		if cmds, _ := decodeValue(in.value); len(cmds) == 1 && bytes.Equal(cmds[0].Data, vc) {
			idxC = i
		}
	}
	if idxC == 0 || c2.log[idxC] != nil && !c2.log[idxC].ballot.IsZero() {
		t.Fatalf("setup: c at %d on node 3, node 2 holds %+v", idxC, c2.log[idxC])
	}
	if c2.chosen >= idxC-2 {
		t.Fatalf("setup: node 2 has chosen %d, want a, b, c unchosen", c2.chosen)
	}

	n.hold = func(Message) bool { return false }
	n.sent = nil
	c2.campaign()
	n.settle()
	promises := 0
	for _, m := range n.sent {
		switch {
		case m.Type == MsgPrepare && m.From == 2 && !m.Probe:
			if len(m.Entries) != 2 {
				t.Errorf("Prepare to %d lists %d held entries, want 2 (a, b)", m.To, len(m.Entries))
			}
		case m.Type == MsgPromise && m.To == 2 && !m.Probe && !m.Reject:
			promises++
			var got []uint64
			for _, e := range m.Entries {
				got = append(got, e.Index)
			}
			if !slices.Equal(got, []uint64{idxC}) {
				t.Errorf("Promise from %d reports indexes %v, want only %d (c, which node 2 lacks)", m.From, got, idxC)
			}
		}
	}
	if promises == 0 {
		t.Fatal("no Promise sent to node 2")
	}
	if c2.role != leader {
		t.Fatalf("node 2 is %v, want leader", c2.role)
	}
	in := c2.log[idxC]
	if in == nil || in.ballot != c2.ballot {
		t.Fatalf("node 2 leads but did not re-propose c at %d: %+v", idxC, in)
	}
	if cmds, _ := decodeValue(in.value); len(cmds) != 1 || !bytes.Equal(cmds[0].Data, vc) {
		t.Fatalf("node 2 re-proposed %q at %d, want c", in.value, idxC)
	}
}
