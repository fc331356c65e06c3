package paxos

import (
	"fmt"
	"testing"
)

// TestSimReviewRemovedNodeFetches (review of 9da6410): a node removed by
// the latest change it knows fetches the log like a learner. It must
// learn what is chosen after its removal (the fetch works) and must not
// vote, promise, probe or campaign meanwhile: every message it sends
// while the others commit under load is checked. The simulation's own
// checks (one value per index on every node, applied logs agree) cover
// what it stores. Seeds 12 and 14 had the removed node grant a lagging
// candidate's probe (onProbe now refuses, as onPrepare does), and 7 has a
// candidate that asks it, rightly, for a promise below the removal.
func TestSimReviewRemovedNodeFetches(t *testing.T) {
	for _, seed := range []int64{7, 11, 12, 14, 23} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { reviewRemovedFetch(t, seed) })
	}
}

func reviewRemovedFetch(t *testing.T, seed int64) {
	s := newSim(t, seed, simOpts{nodes: 3})
	defer s.close()
	steps := func(n int, until func() bool) bool {
		for end := s.now + int64(n); s.now < end; {
			if until() {
				return true
			}
			if s.rng.Intn(3) == 0 {
				s.proposeRandom()
			}
			s.stepOnce()
		}
		return until()
	}
	if !steps(5000, func() bool { return s.leaderID() != 0 }) {
		s.fatalf("no leader; %s", s.describe())
	}
	old := s.leaderID()
	ld := s.nodes[old]
	cur := ld.core.hist.latest()
	var rest []Member
	for _, m := range cur.Members {
		if m.ID != old {
			rest = append(rest, Member{ID: m.ID, Addr: fmt.Sprintf("sim-%d", m.ID)})
		}
	}
	ld.core.propose(encodeChange(membershipChange{Prev: cur.Index, Members: rest}), flagMembership)
	s.process(ld)
	on := s.nodes[old]
	var removed *Membership
	if !steps(20000, func() bool {
		h := on.core.hist.latest()
		if h.Index == cur.Index {
			return false
		}
		removed = h
		return on.core.chosen+1 >= h.Active
	}) {
		s.fatalf("node %d never saw its removal active; %s", old, s.describe())
	}
	if !steps(20000, func() bool { l := s.leaderID(); return l != 0 && l != old }) {
		s.fatalf("no new leader after removing %d; %s", old, s.describe())
	}
	startChosen := on.core.chosen
	// A candidate that has not learned that the removal's last instance
	// before Active is chosen asks the removed node for a promise there,
	// where it is still a voter: that promise is due. Only one for
	// instances from Active on is wrong.
	prepareFrom := map[Ballot]uint64{}
	for k := 0; k < 6000; k++ {
		if s.rng.Intn(3) == 0 {
			s.proposeRandom()
		}
		s.stepOnce()
		for i := range s.net {
			m := &s.net[i].m
			if m.To == old && m.Type == MsgPrepare && !m.Probe {
				prepareFrom[m.Ballot] = m.Index
			}
			if m.From != old {
				continue
			}
			switch {
			case m.Type == MsgPrepare:
				s.fatalf("removed node %d sent %v (probe %v)", old, m.Type, m.Probe)
			case m.Type == MsgPromise && !m.Reject && !m.Probe:
				if from, ok := prepareFrom[m.Ballot]; !ok || from >= removed.Active {
					s.fatalf("removed node %d promised %v to %d for instances from %d (known: %v; removed from %d)", old, m.Ballot, m.To, from, ok, removed.Active)
				}
			case m.Type == MsgPromise && !m.Reject:
				s.fatalf("removed node %d granted a probe %v to %d", old, m.Ballot, m.To)
			case m.Type == MsgAccepted && len(m.Indexes) > 0 && m.Indexes[len(m.Indexes)-1] >= removed.Active:
				s.fatalf("removed node %d voted for %v (members from %d: %v)", old, m.Indexes, removed.Active, removed.IDs())
			}
		}
		if on.core.role != follower {
			s.fatalf("removed node %d is %v", old, on.core.role)
		}
	}
	l := s.nodes[s.leaderID()]
	if !steps(20000, func() bool { return on.core.chosen >= l.core.chosen && l.core.chosen > startChosen+10 }) {
		s.fatalf("removed node %d stopped at chosen %d (leader %d at %d): it does not fetch", old, on.core.chosen, l.id, l.core.chosen)
	}
	s.heal()
	s.check()
}
