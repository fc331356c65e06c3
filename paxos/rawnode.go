package paxos

import "phxgo/wal"

// rawNode is the whole of the core that a driver may use, in the shape of
// etcd-io/raft's RawNode: inputs go in through Step, Tick, Propose,
// Abandon, Flush, Campaign and AdoptMeta; the output of all of them comes
// out of Ready, to be persisted, sent and applied in the order Ready's
// doc gives (persist.go does that, for Node and the simulation alike);
// Advance reports back what became durable and applied. What the driver
// needs to know about the core (leader, role, counters) it reads from
// Soft, a copy; it never touches the core's fields, so the core's
// invariants are the core's business alone.
//
// Unlike etcd's Advance, which acknowledges one Ready before the next may
// be taken, the driver here takes Readys while earlier ones are still
// being saved (the pipeline of persist.go); Ready's rules hold across
// them. Advance only lets the core drop what storage now serves.
type rawNode struct{ c *core }

func newRawNode(cc coreConfig, hs wal.HardState, entries []wal.Accepted, reader logReader) *rawNode {
	return &rawNode{c: newCore(cc, hs, entries, reader)}
}

// softState is the core's state a driver reports or acts on, copied out
// after each round of inputs.
type softState struct {
	Leader   uint32
	Role     role
	Terms    uint64 // leaderships won by this core (Campaign waits for one)
	Promised Ballot
	Chosen   uint64
	Pending  int // own commands not applied yet

	ValuesProposed, CmdsProposed, BytesProposed uint64
	Dropped                                     [NumDropReasons]uint64
	LastDrop                                    dropNote
	Exhausted, StuckPromise                     bool
	StepDowns                                   [NumStepDownCauses]uint64
	LastStepDown                                stepDown
	LeaderTimeouts                              uint64
	LostLeader                                  uint32
}

// Soft returns a copy of the core's soft state.
func (r *rawNode) Soft() softState {
	c := r.c
	return softState{
		Leader: c.leader, Role: c.role, Terms: c.terms, Promised: c.promised, Chosen: c.chosen, Pending: len(c.pending),
		ValuesProposed: c.valuesProposed, CmdsProposed: c.cmdsProposed, BytesProposed: c.bytesProposed,
		Dropped: c.dropped, LastDrop: c.lastDrop, Exhausted: c.exhausted, StuckPromise: c.stuckPromise,
		StepDowns: c.stepDowns, LastStepDown: c.lastStepDown, LeaderTimeouts: c.leaderTimeouts, LostLeader: c.lostLeader,
	}
}

// Step hands the core one peer message (checked there: core_validate.go).
func (r *rawNode) Step(m Message) { r.c.step(m) }

// Reject counts a peer message the driver refused before the core saw it
// (a snapshot its state machine would not restore), like one the core
// drops itself.
func (r *rawNode) Reject(m *Message, err *BadMessageError) { r.c.drop(m, err) }

// Tick advances the core's logical clock by one tick.
func (r *rawNode) Tick() { r.c.tickOnce() }

// SetOdd marks this node's log the odd one (core_odd.go).
func (r *rawNode) SetOdd() { r.c.setOdd() }

// Propose adds a local command and returns its seq, the key under which
// its application is reported (applier.go). ErrNoQuorum: the node heard
// neither a leader nor a majority lately; the command was not taken.
func (r *rawNode) Propose(data []byte, flags byte) (uint64, error) {
	if !r.c.canPropose() {
		return 0, ErrNoQuorum
	}
	return r.c.propose(data, flags), nil
}

// Abandon forgets a local command whose caller gave up (it may still be
// chosen and applied).
func (r *rawNode) Abandon(seq uint64) { r.c.abandon(seq) }

// Flush ends the batch linger (Ready.Linger asked for it).
func (r *rawNode) Flush() { r.c.flushBatch() }

// Campaign makes the core run phase 1 now and retry until it has led
// once (Soft().Terms rises) or StopCampaign. It returns (true, nil) if
// the core leads already, ErrNoQuorum if it heard neither a leader it
// follows nor a majority lately (canPropose's test). A request that
// joins a running campaign is not judged here: CampaignFailed does.
//
// Not hasQuorum alone: a follower hears only the leader, so in a cluster
// of 5 or more it counts 2 and would refuse a healthy campaign. A leader
// it heard within 2E ticks had a majority then (it steps down without
// one); whether a majority answers now is for CampaignFailed to judge,
// from the campaign's own Prepares. A node that has heard nothing for 2E
// is refused here, as before, without raising its ballot: that is what
// keeps a long-isolated node from disturbing the leader when it returns.
func (r *rawNode) Campaign() (leading bool, err error) {
	c := r.c
	if c.role == leader {
		return true, nil
	}
	if c.hist != nil && !c.voter() {
		return false, ErrNotVoter
	}
	if c.odd {
		return false, ErrOddLog
	}
	if !c.campaigning && !c.canPropose() {
		return false, ErrNoQuorum
	}
	c.campaign()
	return false, nil
}

// StopCampaign ends a campaign; an election already running goes on.
func (r *rawNode) StopCampaign() { r.c.stopCampaign() }

// Now is the core's logical clock, in ticks.
func (r *rawNode) Now() int64 { return r.c.tick }

// CampaignFailed reports whether a campaign begun at tick start has
// found no majority: no majority was heard within the last 2E ticks,
// all of them after the call (the first check can fail at start+2E).
//
// The window starts at the campaign, not before it: a follower had heard
// only the leader until its Prepares went out to every member, and the
// Promises and rejections they bring back count as heard (step sets
// lastHeard for every message from a voter). A healthy cluster answers
// within a round trip, and retransmits and retries (at most E ticks of
// backoff apart) keep the answers coming while it campaigns; a node cut
// off from the majority hears at most a minority in the whole window and
// fails at start+2E, the bound Node.Campaign documents. Counting the
// answers alone (judging at once) would fail every call made before they
// arrive; this needs no new state in the core, only the call's tick.
func (r *rawNode) CampaignFailed(start int64) bool {
	c := r.c
	return c.tick-start >= int64(2*c.cfg.ElectionTicks) && !c.hasQuorum()
}

// AdoptMeta merges a snapshot's membership history into the core's.
func (r *rawNode) AdoptMeta(b []byte) error { return r.c.adoptMeta(b) }

// Members returns the core's current view of the membership, as
// Ready.Members carries it when it changes.
func (r *rawNode) Members() *memberView { return r.c.memberView() }

// Ready returns everything the inputs since the last call produced.
func (r *rawNode) Ready() Ready { return r.c.ready() }

// Advance reports that every entry up to index that Ready handed out in
// Committed was handed to the applier and its Update is durable: the core
// drops them from memory and answers a Fetch for them from storage.
func (r *rawNode) Advance(index uint64) { r.c.compact(index) }

// memberView is what the driver needs of the membership: the history (to
// publish, nil while joining) and the nodes the core talks to (to point
// the transport at).
type memberView struct {
	hist    *history // a copy; nil: this node does not know the members yet
	targets []uint32 // self excluded
}

func (c *core) memberView() *memberView {
	v := &memberView{targets: append([]uint32(nil), c.targets...)}
	if c.hist != nil {
		v.hist = c.hist.clone()
	}
	return v
}
