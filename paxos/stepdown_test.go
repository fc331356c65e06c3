package paxos

import (
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestStepDownRecordsQuorumSilence: a leader cut off from both
// followers steps down after 2 election timeouts without an answer,
// counts it as quorum_silent and records how long each was silent; each
// follower, no longer hearing it, counts a leader timeout naming it.
func TestStepDownRecordsQuorumSilence(t *testing.T) {
	n := newReviewNet(1, 2, 3)
	reviewElect(t, n, 1)
	l := n.cores[1]
	n.allow = func(m Message) bool { return m.From != 1 && m.To != 1 }
	limit := 2 * l.cfg.ElectionTicks
	for k := 0; k <= limit+1 && l.role == leader; k++ {
		l.tickOnce()
		n.settle()
	}
	if l.role == leader {
		t.Fatalf("still leading after %d silent ticks", limit+1)
	}
	sd := l.lastStepDown
	if l.stepDowns != [NumStepDownCauses]uint64{StepDownQuorumSilent: 1} || sd.Cause != StepDownQuorumSilent || sd.Ballot != l.ballot {
		t.Fatalf("step-downs %v, last %+v (ballot %v)", l.stepDowns, sd, l.ballot)
	}
	if len(sd.Silent) != 2 {
		t.Fatalf("silent peers %+v, want nodes 2 and 3", sd.Silent)
	}
	for _, p := range sd.Silent {
		if p.ID == 1 || p.Ticks < int64(limit) {
			t.Errorf("peer %d silent %d ticks, want >= %d", p.ID, p.Ticks, limit)
		}
	}
	for _, id := range []uint32{2, 3} {
		f := n.cores[id]
		for k := 0; k < 2*f.cfg.ElectionTicks && f.leaderTimeouts == 0; k++ {
			f.tickOnce()
		}
		if f.leaderTimeouts != 1 || f.lostLeader != 1 {
			t.Errorf("node %d: %d leader timeouts, lost leader %d; want 1 and 1", id, f.leaderTimeouts, f.lostLeader)
		}
	}
}

// TestStepDownRecordsHigherBallot: a leader that meets another node's
// phase 1 counts higher_ballot with that node and its ballot; the new
// leader counts nothing.
func TestStepDownRecordsHigherBallot(t *testing.T) {
	n := newReviewNet(1, 2, 3)
	reviewElect(t, n, 1)
	reviewElect(t, n, 2)
	old, nw := n.cores[1], n.cores[2]
	sd := old.lastStepDown
	if old.stepDowns[StepDownHigherBallot] != 1 || sd.Cause != StepDownHigherBallot || sd.Peer != 2 || sd.Ballot != nw.ballot {
		t.Fatalf("old leader: step-downs %v, last %+v; want higher_ballot from node 2 at %v", old.stepDowns, sd, nw.ballot)
	}
	if nw.stepDowns != ([NumStepDownCauses]uint64{}) {
		t.Fatalf("new leader counted step-downs %v", nw.stepDowns)
	}
}

// TestLeaderLogLinesFollowTheCounts: the run loop's log says each
// change once: leading, a step-down with its cause, a leader timeout.
func TestLeaderLogLinesFollowTheCounts(t *testing.T) {
	var b strings.Builder
	log := slog.New(slog.NewTextHandler(&b, nil))
	var l leaderLogger
	st := softState{Role: leader, Promised: Ballot{Round: 3, Node: 1}}
	l.maybeLog(log, &st, 50*time.Millisecond, time.Second)
	l.maybeLog(log, &st, 50*time.Millisecond, time.Second) // nothing new
	st.Role = follower
	st.StepDowns[StepDownQuorumSilent] = 1
	st.LastStepDown = stepDown{Cause: StepDownQuorumSilent, Ballot: Ballot{Round: 3, Node: 1},
		Silent: []peerSilence{{ID: 2, Ticks: 21}, {ID: 3, Ticks: 30}}}
	l.maybeLog(log, &st, 50*time.Millisecond, time.Second)
	st.LeaderTimeouts, st.LostLeader = 1, 2
	l.maybeLog(log, &st, 50*time.Millisecond, time.Second)
	out := b.String()
	for _, want := range []string{
		`msg="paxos: leading" ballot_round=3 ballot_node=1`,
		`level=WARN msg="paxos: stepped down as leader: no majority answered" cause=quorum_silent`,
		`silent="node 2 1050ms, node 3 1500ms" limit=1s`,
		`msg="paxos: leader silent for an election timeout; asking the peers whether it is gone" leader=2`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if c := strings.Count(out, "\n"); c != 3 {
		t.Errorf("%d lines, want 3:\n%s", c, out)
	}
}
