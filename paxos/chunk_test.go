package paxos

import (
	"bytes"
	"testing"
)

// checkCut fails if a message of kind typ carries more than the core's
// FetchMaxBytes (200 in thriftyNet) of values, unless it carries one.
func checkCut(t *testing.T, sent []Message, typ MsgType) (messages, items int) {
	t.Helper()
	for _, m := range sent {
		if m.Type != typ {
			continue
		}
		size, n := 0, 0
		for _, e := range m.Entries {
			size, n = size+len(e.Value), n+1
		}
		for _, c := range m.Cmds {
			size, n = size+len(c), n+1
		}
		if n > 1 && size > 200 {
			t.Errorf("%v carries %d items, %d bytes: over FetchMaxBytes", m, n, size)
		}
		if n > 0 {
			messages++
			items += n
		}
	}
	return messages, items
}

// TestAcceptsAreCut: a leader with a window of large values in flight
// sends them in Accepts of at most FetchMaxBytes each, first and on the
// retransmit. In one Accept they outgrew gRPC's receive limit under 64
// KiB commands: the stream broke and the followers never voted again.
func TestAcceptsAreCut(t *testing.T) {
	n, l := newLedNet(t)
	n.sent = nil
	n.hold = func(Message) bool { return true } // nothing gets chosen
	for i := range 8 {
		l.propose(bytes.Repeat([]byte{byte('a' + i)}, 120), 0)
	}
	n.settle()
	msgs, entries := checkCut(t, n.sent, MsgAccept)
	if entries < 2*8 || msgs < 4 { // to the voter and the spare
		t.Fatalf("%d accepts holding %d entries; want the 8 values to both followers, cut", msgs, entries)
	}
	n.sent = nil
	for range 2 { // RetransmitTicks
		l.tickOnce()
	}
	n.settle()
	if msgs, entries = checkCut(t, n.sent, MsgAccept); entries < 8 {
		t.Fatalf("retransmit: %d accepts holding %d entries; want the 8 open values again", msgs, entries)
	}
}

// TestForwardsAreCut: a follower that queued commands while it knew no
// leader forwards them all at once on its next tick after it learns one,
// in Forwards of at most FetchMaxBytes each.
func TestForwardsAreCut(t *testing.T) {
	n := newThriftyNet(t, 1, 2, 3)
	f := n.cores[2]
	for i := range 8 {
		f.propose(bytes.Repeat([]byte{byte('a' + i)}, 120), 0)
	}
	n.settle()
	n.cores[1].campaign()
	n.settle()
	f.tickOnce() // retryPending: every pending command to the leader now known
	n.settle()
	msgs, cmds := checkCut(t, n.sent, MsgForward)
	if cmds < 8 || msgs < 4 {
		t.Fatalf("%d forwards holding %d commands; want the 8 commands, cut", msgs, cmds)
	}
	if got := n.cores[1].chosen; got < 8 {
		t.Fatalf("chosen %d; want the 8 forwarded commands chosen", got)
	}
}

// TestPromiseFitsMaxMessageBytes: a Promise, which cannot be cut, carries
// every value its acceptor holds above the chosen index; for an acceptor
// holding a full window of the largest values it still fits the receive
// limit GRPCServerOptions sets (over gRPC's 4 MiB default, an election
// under large commands never finished).
func TestPromiseFitsMaxMessageBytes(t *testing.T) {
	n, l := newLedNet(t)
	const size = 1 << 20
	cfg := DefaultConfig()
	cfg.Window, cfg.BatchMaxBytes, cfg.FetchMaxBytes, cfg.MaxValueBytes = l.cfg.Window, l.cfg.BatchMaxBytes, l.cfg.FetchMaxBytes, size
	// Node 2 stores the values; nobody hears its votes, so none is chosen.
	n.hold = func(m Message) bool { return !(m.Type == MsgAccept && m.To == 2) }
	for i := range l.cfg.Window {
		l.propose(bytes.Repeat([]byte{byte(i)}, size), 0)
		n.settle()
	}
	n.sent = nil
	n.hold = func(m Message) bool { return m.To == 1 || m.From == 1 } // the old leader is gone
	n.cores[3].campaign()
	n.settle()
	var promise *Message
	for i, m := range n.sent {
		if m.Type == MsgPromise && m.From == 2 && !m.Reject {
			promise = &n.sent[i]
		}
	}
	if promise == nil || len(promise.Entries) != l.cfg.Window {
		t.Fatalf("node 2's promise %v; want one holding the %d open values", promise, l.cfg.Window)
	}
	if got, limit := messageSize(promise), cfg.MaxMessageBytes(); got > limit {
		t.Fatalf("a promise of %d bytes is over MaxMessageBytes %d", got, limit)
	}
}
