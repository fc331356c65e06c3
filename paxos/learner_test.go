package paxos

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

func learnerMembers(voters []uint32, learners ...uint32) []Member {
	ms := members(voters...)
	for _, id := range learners {
		ms = append(ms, Member{ID: id, Addr: fmt.Sprintf("n%d", id), Learner: true})
	}
	slices.SortFunc(ms, func(a, b Member) int { return int(a.ID) - int(b.ID) })
	return ms
}

func sameMember(a, b Member) bool {
	return a.ID == b.ID && a.Addr == b.Addr && string(a.Info) == string(b.Info) && a.Learner == b.Learner
}

// TestLearnerHistoryRules: the learner flag's encoding (old logs decode
// unchanged), and the change rule: one add, remove, promotion or
// demotion at a time, at least one voter left.
func TestLearnerHistoryRules(t *testing.T) {
	// A change written before learners existed: ids as plain uvarints.
	old := encodeChange(membershipChange{Prev: 3, Members: members(1, 2, 3)})
	ch, err := decodeChange(old)
	if err != nil || ch.Prev != 3 || !slices.Equal((&Membership{Members: ch.Members}).IDs(), []uint32{1, 2, 3}) {
		t.Fatalf("old change: %+v, %v", ch, err)
	}
	for _, m := range ch.Members {
		if m.Learner {
			t.Fatalf("old change decodes a learner: %+v", m)
		}
	}
	with := learnerMembers([]uint32{1, 2, 3}, 4)
	ch, err = decodeChange(encodeChange(membershipChange{Prev: 9, Members: with}))
	if err != nil || !slices.EqualFunc(ch.Members, with, sameMember) {
		t.Fatalf("round trip: %+v, %v; want %+v", ch.Members, err, with)
	}
	m := Membership{Members: with}
	if !m.IsLearner(4) || m.IsVoter(4) || !m.IsVoter(1) || m.IsLearner(1) || !m.Has(4) || m.Voters() != 3 {
		t.Fatalf("accessors on %+v", m)
	}
	h := genesis(learnerMembers([]uint32{1, 2, 3}, 4))
	if h2, err := decodeHistory(h.encode()); err != nil || !slices.EqualFunc(h2.latest().Members, h.latest().Members, sameMember) {
		t.Fatalf("history round trip: %v", err)
	}

	for _, tc := range []struct {
		name string
		next []Member
		want error
	}{
		{"promote", learnerMembers([]uint32{1, 2, 3, 4}), nil},
		{"demote", learnerMembers([]uint32{1, 2}, 3, 4), nil},
		{"add learner", learnerMembers([]uint32{1, 2, 3}, 4, 5), nil},
		{"add voter", learnerMembers([]uint32{1, 2, 3, 5}, 4), nil},
		{"remove learner", learnerMembers([]uint32{1, 2, 3}), nil},
		{"promote and add", learnerMembers([]uint32{1, 2, 3, 4}, 5), ErrBadMembership},
		{"demote two", learnerMembers([]uint32{1}, 2, 3, 4), ErrBadMembership},
		{"promote and demote", learnerMembers([]uint32{1, 2, 4}, 3), ErrBadMembership},
	} {
		err := h.check(10, membershipChange{Prev: 0, Members: tc.next})
		if !errors.Is(err, tc.want) || tc.want == nil && err != nil {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	// At least one voter: the last one may not be demoted.
	h1 := genesis(learnerMembers([]uint32{1}, 2))
	if err := h1.check(10, membershipChange{Prev: 0, Members: learnerMembers(nil, 1, 2)}); !errors.Is(err, ErrBadMembership) {
		t.Fatalf("demoting the last voter: %v", err)
	}
	// Histories that differ only in a learner flag are different clusters.
	a, b := genesis(members(1, 2, 3)), genesis(members(1, 2, 3))
	a.apply(10, membershipChange{Prev: 0, Members: learnerMembers([]uint32{1, 2, 3}, 4)})
	b.apply(10, membershipChange{Prev: 0, Members: members(1, 2, 3, 4)})
	if _, err := a.merge(b); err == nil {
		t.Fatal("merged histories that disagree on a learner")
	}
}

// learnerSim drives a sim with nodes 1-3 voting and spares 4, 5.
type learnerSim struct {
	*sim
	t *testing.T
}

func newLearnerSim(t *testing.T, seed int64) *learnerSim {
	s := &learnerSim{sim: newSim(t, seed, simOpts{nodes: 3, spares: 2}), t: t}
	t.Cleanup(s.close)
	if !s.steps(5000, func() bool { return s.leaderID() != 0 }) {
		s.fatalf("no leader; %s", s.describe())
	}
	return s
}

// steps runs the sim under light load until cond or n steps.
func (s *learnerSim) steps(n int, cond func() bool) bool {
	for end := s.now + int64(n); s.now < end; {
		if cond() {
			return true
		}
		if s.rng.Intn(3) == 0 {
			s.proposeRandom()
		}
		s.stepOnce()
	}
	return cond()
}

// proposeChange has ld propose next (the sim's addresses filled in) and
// returns the members next replaces.
func (s *learnerSim) proposeChange(ld *simNode, next []Member) *Membership {
	cur := ld.core.hist.latest()
	for i := range next {
		next[i].Addr = fmt.Sprintf("sim-%d", next[i].ID)
	}
	ld.core.propose(encodeChange(membershipChange{Prev: cur.Index, Members: next}), flagMembership)
	s.process(ld)
	return cur
}

// change makes the leader propose next and waits until it is active.
func (s *learnerSim) change(next []Member) *Membership {
	s.t.Helper()
	cur := s.proposeChange(s.nodes[s.leaderID()], next)
	var got *Membership
	if !s.steps(20000, func() bool {
		l := s.leaderID()
		if l == 0 {
			return false
		}
		got = s.nodes[l].core.hist.latest()
		return got.Index != cur.Index && s.nodes[l].core.chosen+1 >= got.Active
	}) {
		s.fatalf("change to %+v never became active; %s", next, s.describe())
	}
	return got
}

// progress reports whether a new command gets chosen within n steps.
func (s *learnerSim) progress(n int) bool {
	var high uint64
	for _, id := range s.ids {
		if nd := s.nodes[id]; nd.up {
			high = max(high, nd.core.chosen)
		}
	}
	return s.steps(n, func() bool {
		for _, id := range s.ids {
			if nd := s.nodes[id]; nd.up && nd.core.chosen > high+1 {
				return true
			}
		}
		return false
	})
}

// TestSimLearnerNeverCounts: learners 4 and 5 follow the log (every
// chosen entry reaches them) but never count: with two of the three
// voters down, the remaining voter and both learners (3 of 5 nodes up)
// choose nothing; a learner never campaigns, its forged promise and vote
// are dropped; once promoted, node 4 counts, and demoted again it does
// not.
func TestSimLearnerNeverCounts(t *testing.T) {
	s := newLearnerSim(t, 11)
	s.change(learnerMembers([]uint32{1, 2, 3}, 4))
	m := s.change(learnerMembers([]uint32{1, 2, 3}, 4, 5))
	for _, id := range []uint32{4, 5} {
		n := s.nodes[id]
		if !s.steps(20000, func() bool { return n.core.chosen >= m.Active }) {
			s.fatalf("learner %d does not follow the log; %s", id, s.describe())
		}
		if n.core.voter() || !n.core.member() {
			s.fatalf("learner %d: voter %v member %v", id, n.core.voter(), n.core.member())
		}
		// It never stands for election, and Campaign says why.
		n.core.campaign()
		if n.core.role != follower || n.core.campaigning {
			s.fatalf("learner %d campaigns: role %v", id, n.core.role)
		}
		if _, err := n.rn.Campaign(); !errors.Is(err, ErrNotVoter) {
			s.fatalf("learner %d: Campaign: %v, want ErrNotVoter", id, err)
		}
	}

	// A learner claiming to vote is dropped and counted.
	ld := s.nodes[s.leaderID()]
	// Quorums count voters only: the leader and both learners are 3 of 5
	// members but 1 of 3 voters.
	if votes := ld.core.bit(ld.id) | ld.core.bit(4) | ld.core.bit(5); ld.core.isQuorum(votes, m) {
		s.fatalf("the leader and two learners make a quorum of %+v", m.Members)
	}
	before := ld.core.dropped[DropLearnerVote]
	ld.core.step(Message{Type: MsgAccepted, From: 4, To: ld.id, Ballot: ld.core.ballot, Indexes: []uint64{ld.core.chosen + 1}})
	ld.core.step(Message{Type: MsgAccepted, From: 5, To: ld.id, Ballot: ld.core.ballot, Reject: true, Promised: Ballot{Round: ld.core.ballot.Round + 1, Node: 5}})
	if got := ld.core.dropped[DropLearnerVote] - before; got != 2 {
		s.fatalf("learner votes dropped: %d, want 2", got)
	}
	if ld.core.role != leader {
		s.fatalf("a learner's rejection made the leader step down")
	}
	s.process(ld)

	// Down to one voter (the leader) plus both learners: no progress.
	lead := s.leaderID()
	for _, id := range []uint32{1, 2, 3} {
		if id != lead {
			s.crash(s.nodes[id])
		}
	}
	if s.progress(3000) {
		s.fatalf("chose with one voter of three and two learners; %s", s.describe())
	}
	back := otherVoter(lead)
	s.start(s.nodes[back])
	if !s.progress(20000) {
		s.fatalf("no progress with two voters of three; %s", s.describe())
	}

	// Promote 4: voters 1-4, a majority is 3, and 4 counts toward it.
	s.upAll()
	m = s.change(learnerMembers([]uint32{1, 2, 3, 4}, 5))
	if m.Voters() != 4 || !m.IsVoter(4) {
		s.fatalf("after promotion: %+v", m.Members)
	}
	lead = s.leaderID()
	down := otherVoter(lead)
	s.crash(s.nodes[down]) // the leader, the other old voter and 4: 3 of 4
	if !s.progress(20000) {
		s.fatalf("no progress with voters %d, 4 and one more; %s", lead, s.describe())
	}
	s.upAll()
	// Demote 4 again: it stops voting on what the new members govern.
	m = s.change(learnerMembers([]uint32{1, 2, 3}, 4, 5))
	n4 := s.nodes[4]
	if !s.steps(20000, func() bool { return n4.core.chosen+1 >= m.Active }) {
		s.fatalf("node 4 did not learn its demotion; %s", s.describe())
	}
	j := n4.core.chosen + Alpha + 1
	n4.core.step(Message{Type: MsgAccept, From: s.leaderID(), To: 4, Ballot: Ballot{Round: n4.core.roundReach(), Node: s.leaderID()}, Entries: []Entry{{Index: j, Value: testValue("x")}}})
	for _, msg := range n4.core.ready().Messages {
		if msg.Type == MsgAccepted && slices.Contains(msg.Indexes, j) {
			s.fatalf("demoted node voted on instance %d", j)
		}
	}
	s.heal()
}

// otherVoter is the first of learnerSim's voters 1-3 that is not lead.
func otherVoter(lead uint32) uint32 {
	for _, id := range []uint32{1, 2, 3} {
		if id != lead {
			return id
		}
	}
	return 0
}

// upAll restarts every crashed node (heal does too, but only once: it
// proposes its final command).
func (s *learnerSim) upAll() {
	for _, id := range s.ids {
		if n := s.nodes[id]; !n.up {
			s.start(n)
		}
	}
}

// TestSimDemotedLeaderStepsDown: the leader demoted through the log leads
// until the demotion is active, then steps down; a voter takes over and
// the old leader, a learner now, keeps following the log.
func TestSimDemotedLeaderStepsDown(t *testing.T) {
	s := newLearnerSim(t, 5)
	old := s.leaderID()
	var next []Member
	for _, id := range []uint32{1, 2, 3} {
		next = append(next, Member{ID: id, Learner: id == old})
	}
	m := s.change(next)
	if !s.steps(20000, func() bool { l := s.leaderID(); return l != 0 && l != old }) {
		s.fatalf("no new leader after demoting %d; %s", old, s.describe())
	}
	on := s.nodes[old]
	if on.core.role == leader || on.core.voter() {
		s.fatalf("demoted node %d: role %v voter %v", old, on.core.role, on.core.voter())
	}
	if !s.progress(20000) {
		s.fatalf("no progress with two voters; %s", s.describe())
	}
	target := s.nodes[s.leaderID()].core.chosen
	if !s.steps(20000, func() bool { return on.core.chosen >= target && target >= m.Active }) {
		s.fatalf("demoted node %d does not follow the log; %s", old, s.describe())
	}
	s.heal()
}

// TestSimPromotionLeadsUntilActive: a promotion adds a voter only from
// its activation on (Alpha instances after it is chosen); until then the
// leader needs a majority of the voters it has. With one voter down and
// the learner unheard (in e2e TestLearner both had just been restarted),
// the leader that applies the promotion keeps leading and choosing on two
// of three voters, instead of stepping down at once for want of three of
// four; after the activation the promoted node counts.
func TestSimPromotionLeadsUntilActive(t *testing.T) {
	s := newLearnerSim(t, 7)
	s.change(learnerMembers([]uint32{1, 2, 3}, 4))
	lead := s.leaderID()
	down := otherVoter(lead)
	s.crash(s.nodes[down])
	s.crash(s.nodes[4])
	if !s.progress(20000) {
		s.fatalf("no progress with two voters of three; %s", s.describe())
	}
	// Long enough (2E ticks, a tick each 10 steps) that the leader has
	// heard from neither.
	s.steps(30*10*2, func() bool { return false })
	if s.leaderID() != lead {
		s.fatalf("leader %d lost its lead to %d on two voters of three; %s", lead, s.leaderID(), s.describe())
	}
	ld := s.nodes[lead]
	cur := s.proposeChange(ld, learnerMembers([]uint32{1, 2, 3, 4}))
	if !s.steps(20000, func() bool { return ld.core.hist.latest().Index != cur.Index }) {
		s.fatalf("the promotion was not chosen with two voters of three; %s", s.describe())
	}
	m := ld.core.hist.latest()
	if ld.core.chosen+1 >= m.Active {
		s.fatalf("the promotion is active already (chosen %d, active %d): nothing left to test", ld.core.chosen, m.Active)
	}
	if !s.progress(20000) || s.leaderID() != lead {
		s.fatalf("after the promotion at %d (active at %d), leader %d (was %d) chose nothing more with two voters of three; %s",
			m.Index, m.Active, s.leaderID(), lead, s.describe())
	}
	s.start(s.nodes[4])
	if !s.steps(40000, func() bool { l := s.leaderID(); return l != 0 && s.nodes[l].core.chosen > m.Active }) {
		s.fatalf("no progress past the activation at %d with voters %d, 4 and one more; %s", m.Active, lead, s.describe())
	}
	s.heal()
}
