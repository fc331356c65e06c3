package paxos

import (
	"slices"
	"testing"

	"phxgo/wal"
)

// thriftyNet delivers the messages of a few cores to each other at once,
// except what its filter holds back; it also keeps every Ready's Update.
type thriftyNet struct {
	cores   map[uint32]*core
	hold    func(Message) bool // true: do not deliver
	held    []Message
	updates map[uint32][]wal.Update
	sent    []Message // everything the cores sent (delivered or held)
	moved   bool      // settle: a message went out this round
}

func newThriftyNet(t *testing.T, ids ...uint32) *thriftyNet {
	t.Helper()
	n := &thriftyNet{cores: map[uint32]*core{}, updates: map[uint32][]wal.Update{}, hold: func(Message) bool { return false }}
	for _, id := range ids {
		cfg := coreConfig{ID: id, Peers: ids, ElectionTicks: 10, HeartbeatTicks: 1, RetransmitTicks: 2,
			RetryTicks: 20, Window: 8, BatchMaxBytes: 64, FetchMaxBytes: 200, Seed: int64(id), Thrifty: true}
		n.cores[id] = newCore(cfg, wal.HardState{}, nil, nil)
	}
	return n
}

// newLedNet is a thriftyNet of nodes 1-3 in which node 1 has won phase 1.
func newLedNet(t *testing.T) (*thriftyNet, *core) {
	t.Helper()
	n := newThriftyNet(t, 1, 2, 3)
	l := n.cores[1]
	l.campaign()
	n.settle()
	if l.role != leader {
		t.Fatalf("node 1 is %v, want leader", l.role)
	}
	return n, l
}

// settle runs rounds of ready and delivery until nothing moves; each
// Ready goes through the production pipeline (persist.go) with saves
// that are durable at once (thriftyPipe).
func (n *thriftyNet) settle() {
	for n.moved = true; n.moved; {
		n.moved = false
		for _, id := range []uint32{1, 2, 3} {
			rd := n.cores[id].ready()
			n.deliver(rd.Early)
			env := thriftyPipe{n, id}
			if err := persistBatch(env, []Ready{rd}, func(j *saveJob) { completeSave(env, j) }); err != nil {
				panic(err) // nothing here fails
			}
		}
	}
}

func (n *thriftyNet) deliver(ms []Message) {
	for _, m := range ms {
		n.moved = true
		n.sent = append(n.sent, m)
		if n.hold(m) {
			n.held = append(n.held, m)
			continue
		}
		n.cores[m.To].step(m)
	}
}

// thriftyPipe is a thriftyNet core's pipeEnv: it keeps the Updates,
// delivers the messages, and has no applier (nor storage to compact to).
type thriftyPipe struct {
	n  *thriftyNet
	id uint32
}

type savedNow struct{}

func (savedNow) wait() error { return nil }

func (p thriftyPipe) failed() bool                             { return false }
func (p thriftyPipe) saveMeta([]byte) (bool, error)            { return false, nil }
func (p thriftyPipe) installSnapshot(*InstalledSnapshot) error { return nil }
func (p thriftyPipe) apply(applyItem)                          {}
func (p thriftyPipe) send(ms []Message)                        { p.n.deliver(ms) }
func (p thriftyPipe) advance(uint64)                           {}
func (p thriftyPipe) submit(u wal.Update) pendingSave {
	p.n.updates[p.id] = append(p.n.updates[p.id], u)
	return savedNow{}
}

func (n *thriftyNet) accepts(from uint32) (asked, spared map[uint32]bool) {
	asked, spared = map[uint32]bool{}, map[uint32]bool{}
	for _, m := range n.sent {
		if m.Type == MsgAccept && m.From == from && len(m.Entries) > 0 {
			if m.NoVote {
				spared[m.To] = true
			} else {
				asked[m.To] = true
			}
		}
	}
	return asked, spared
}

// TestThriftyAsksAMajority: a thrifty leader of 3 asks one follower to
// vote and sends the other the value marked NoVote; that one stores it
// without a sync of its own and does not answer. When the voter falls
// silent, the spare is asked to vote on the retransmit, and from then on
// it is the one asked, even after a late vote from the old voter.
func TestThriftyAsksAMajority(t *testing.T) {
	n, l := newLedNet(t)

	n.sent, n.updates = nil, map[uint32][]wal.Update{}
	l.propose([]byte("a"), 0)
	n.settle()
	asked, spared := n.accepts(1)
	if !asked[2] || asked[3] || !spared[3] || spared[2] {
		t.Fatalf("asked %v, spared %v; want 2 asked (lowest id among equals), 3 spared", asked, spared)
	}
	if l.chosen != 1 || n.cores[3].chosen != 1 {
		t.Fatalf("chosen: leader %d, spare %d; want 1 on both", l.chosen, n.cores[3].chosen)
	}
	for _, m := range n.sent {
		if m.From == 3 && m.Type == MsgAccepted && len(m.Indexes) > 0 {
			t.Fatalf("the spare voted: %v", m)
		}
	}
	for _, u := range n.updates[3] {
		if len(u.Accepted) > 0 && !u.NoSync {
			t.Fatalf("the spare's update %+v asks for a sync", u)
		}
	}
	for _, u := range n.updates[2] {
		if len(u.Accepted) > 0 && u.NoSync {
			t.Fatalf("the voter's update %+v skips the sync of its vote", u)
		}
	}

	// Node 2 falls silent: the instance waits for node 3's vote.
	n.hold = func(m Message) bool { return m.To == 2 || m.From == 2 }
	n.sent = nil
	l.propose([]byte("b"), 0)
	n.settle()
	if l.chosen != 1 {
		t.Fatalf("chosen %d without a vote but the leader's", l.chosen)
	}
	for range 2 { // RetransmitTicks
		l.tickOnce()
	}
	n.settle()
	if l.chosen != 2 {
		t.Fatalf("on the retransmit the spare was not asked: chosen %d", l.chosen)
	}
	n.sent = nil
	l.propose([]byte("c"), 0)
	n.settle()
	asked, spared = n.accepts(1)
	if !asked[3] || !spared[2] {
		t.Fatalf("after node 3 answered for node 2: asked %v, spared %v; want 3 asked, 2 spared", asked, spared)
	}
	if l.chosen != 3 {
		t.Fatalf("chosen %d, want 3", l.chosen)
	}

	// Node 2 comes back and its late vote arrives: the voter stays node
	// 3 (switching on every late vote would flip between the two).
	n.hold = func(Message) bool { return false }
	l.step(Message{Type: MsgAccepted, From: 2, To: 1, Ballot: l.ballot, Indexes: []uint64{2}})
	n.sent = nil
	l.propose([]byte("d"), 0)
	n.settle()
	asked, spared = n.accepts(1)
	if !asked[3] || !spared[2] || l.chosen != 4 {
		t.Fatalf("after a late vote from node 2: asked %v, spared %v, chosen %d; want 3 asked, 2 spared, 4", asked, spared, l.chosen)
	}
}

// TestNotThriftyAsksAll: without Thrifty every follower votes.
func TestNotThriftyAsksAll(t *testing.T) {
	n := newThriftyNet(t, 1, 2, 3)
	for _, c := range n.cores {
		c.cfg.Thrifty = false
	}
	n.cores[1].campaign()
	n.settle()
	n.sent = nil
	n.cores[1].propose([]byte("a"), 0)
	n.settle()
	if asked, spared := n.accepts(1); len(asked) != 2 || len(spared) != 0 {
		t.Fatalf("asked %v, spared %v; want both asked", asked, spared)
	}
}

// TestEmptyAcceptAnsweredOncePerTick: a follower answers the leader's
// heartbeats and chosen-index announcements once per tick, not each one.
func TestEmptyAcceptAnsweredOncePerTick(t *testing.T) {
	n := newThriftyNet(t, 1, 2, 3)
	f := n.cores[2]
	b := Ballot{Round: 1, Node: 1}
	answers := func() int {
		k := 0
		for _, m := range f.ready().Messages {
			if m.Type == MsgAccepted && m.To == 1 {
				k++
			}
		}
		return k
	}
	f.step(Message{Type: MsgAccept, From: 1, To: 2, Ballot: b})
	f.step(Message{Type: MsgAccept, From: 1, To: 2, Ballot: b})
	if k := answers(); k != 1 {
		t.Fatalf("two empty Accepts in one tick: %d answers, want 1", k)
	}
	f.tickOnce()
	f.step(Message{Type: MsgAccept, From: 1, To: 2, Ballot: b})
	if k := answers(); k != 1 {
		t.Fatalf("an empty Accept in the next tick: %d answers, want 1", k)
	}
	f.step(Message{Type: MsgAccept, From: 1, To: 2, Ballot: b, Entries: []Entry{{Index: 1, Ballot: b, Value: testValue("x")}}})
	if k := answers(); k != 1 {
		t.Fatalf("an Accept with entries: %d answers, want 1 (a vote is always answered)", k)
	}
}

// TestSpareGetsEntriesWithTheirChosenIndex: a spare is sent a value's
// entries once the value is chosen, in one Accept that also carries the
// chosen index, and no separate chosen notice: one message per value
// where there were two. While the value is not chosen (and its
// pipeline not empty) the spare is sent nothing.
func TestSpareGetsEntriesWithTheirChosenIndex(t *testing.T) {
	n, l := newLedNet(t)
	n.sent = nil
	l.propose([]byte("a"), 0)
	n.settle()
	var toSpare []Message
	for _, m := range n.sent {
		if m.From == 1 && m.To == 3 && m.Type == MsgAccept {
			toSpare = append(toSpare, m)
		}
	}
	if l.chosen != 1 || n.cores[3].chosen != 1 {
		t.Fatalf("chosen: leader %d, spare %d; want 1 on both", l.chosen, n.cores[3].chosen)
	}
	if len(toSpare) != 1 || len(toSpare[0].Entries) != 1 || !toSpare[0].NoVote || toSpare[0].Chosen != 1 {
		t.Fatalf("to the spare: %+v; want one NoVote Accept with entry 1 and chosen 1", toSpare)
	}

	// The voter's answers are held: "b" stays unchosen, the spare hears
	// nothing of it (until a retransmit asks it to vote).
	n.hold = func(m Message) bool { return m.Type == MsgAccepted && m.To == 1 }
	n.sent = nil
	l.propose([]byte("b"), 0)
	n.settle()
	for _, m := range n.sent {
		if m.From == 1 && m.To == 3 && len(m.Entries) > 0 {
			t.Fatalf("the spare was sent unchosen entries: %+v", m)
		}
	}
	// The votes arrive: chosen, the spare gets "b" with its index.
	n.hold = func(Message) bool { return false }
	held := n.held
	n.held, n.sent = nil, nil
	n.deliver(held)
	n.settle()
	if l.chosen != 2 || n.cores[3].chosen != 2 {
		t.Fatalf("chosen: leader %d, spare %d; want 2 on both", l.chosen, n.cores[3].chosen)
	}
	if in := n.cores[3].log[2]; in == nil || in.value == nil {
		t.Fatalf("the spare lacks entry 2: %+v", in)
	}

	// Node 2 falls silent: the retransmit asks the spare to vote on "c",
	// and once "c" is chosen it is not sent to the spare again.
	n.hold = func(m Message) bool { return m.To == 2 || m.From == 2 }
	n.sent = nil
	l.propose([]byte("c"), 0)
	n.settle()
	for range 2 { // RetransmitTicks
		l.tickOnce()
	}
	n.settle()
	if l.chosen != 3 {
		t.Fatalf("chosen %d, want 3 with the spare's vote", l.chosen)
	}
	sends := 0
	for _, m := range n.sent {
		if m.From == 1 && m.To == 3 && slices.ContainsFunc(m.Entries, func(e Entry) bool { return e.Index == 3 }) {
			sends++
		}
	}
	if sends != 1 {
		t.Fatalf("entry 3 sent to node 3 %d times, want once (the retransmit)", sends)
	}
}
