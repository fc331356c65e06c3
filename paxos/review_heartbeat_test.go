package paxos

import "testing"

// TestReviewHeartbeatTicksMargin (review of fcb029b): for every election
// timeout a follower draws ([et, 2et) ticks), the leader's heartbeat
// period leaves it at least five heartbeats to hear (four to miss).
func TestReviewHeartbeatTicksMargin(t *testing.T) {
	for et := 3; et <= 1000; et++ {
		if hb := heartbeatTicks(et); hb < 1 || 5*hb > et && hb != 1 {
			t.Fatalf("election timeout %d ticks: heartbeat every %d", et, hb)
		}
	}
	cfg := DefaultConfig()
	et := int(cfg.ElectionTimeout / cfg.HeartbeatInterval)
	if hb := heartbeatTicks(et); hb != 2 {
		t.Fatalf("defaults (tick %v, election timeout %v): heartbeat every %d ticks, want 2", cfg.HeartbeatInterval, cfg.ElectionTimeout, hb)
	}
}

// TestReviewChosenReachesFollowerWithinHeartbeat (review of fcb029b): a
// chosen index gets no notice of its own while an instance is still in
// flight; the heartbeat must then bring it to the followers within one
// heartbeat period (2 ticks in production), or their applying lags.
func TestReviewChosenReachesFollowerWithinHeartbeat(t *testing.T) {
	n := newReviewNet(1, 2, 3)
	for _, c := range n.cores {
		c.cfg.HeartbeatTicks = 2
		c.cfg.RetransmitTicks = 100 // only the heartbeat may carry it
	}
	reviewElect(t, n, 1)
	l := n.cores[1]
	n.allow = func(m Message) bool { return m.Type != MsgAccepted || m.To != 1 }
	for _, v := range []string{"x", "y"} {
		l.propose([]byte(v), 0)
		l.flush = true
		l.maybePropose()
		n.settle()
	}
	i := l.next - 2
	if l.chosen >= i || l.inflight() != 2 {
		t.Fatalf("setup: chosen %d, %d in flight, want %d and %d unchosen", l.chosen, l.inflight(), i, i+1)
	}
	l.step(Message{Type: MsgAccepted, From: 2, To: 1, Ballot: l.ballot, Indexes: []uint64{i}, Chosen: n.cores[2].chosen})
	n.settle()
	if l.chosen != i || n.cores[2].chosen >= i {
		t.Fatalf("setup: leader chosen %d (want %d), follower %d (want below)", l.chosen, i, n.cores[2].chosen)
	}
	ticks := 0
	for ; ticks < 10 && (n.cores[2].chosen < i || n.cores[3].chosen < i); ticks++ {
		l.tickOnce()
		n.settle()
	}
	if ticks > l.cfg.HeartbeatTicks {
		t.Fatalf("followers learned chosen %d after %d leader ticks (heartbeat every %d)", i, ticks, l.cfg.HeartbeatTicks)
	}
}
