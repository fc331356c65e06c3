package paxos

import (
	"cmp"
	"slices"
)

// Elections: the probe (pre-vote), phase 1, and Campaign.
//
//	follower ──timeout──▶ probe (Prepare{Probe}, nothing persisted)
//	   ▲                    │ a majority heard no leader for E ticks
//	   │                    ▼
//	   └──reject/timeout── candidate (phase 1: Prepare, durable ballot) ──quorum──▶ leader
//	                        ▲
//	Campaign ───────────────┘ skips the probe; retried after a randomized
//	                          backoff until this node has led once
//
// Why the probe: a node cut off from the leader would otherwise raise its
// ballot on every timeout, and when it rejoined its ballot would make the
// working leader's accepts fail and the leader step down. An acceptor
// grants a probe only if it has not heard a leader for ElectionTicks (a
// leader grants none while it has a quorum), so a node raises its ballot
// only when a majority agrees the leader is gone, or when its owner asked
// with Campaign. Granting or refusing a probe changes no acceptor state,
// so it cannot affect safety; it only decides who may disturb a leader.

func (c *core) becomeFollower(leaderID uint32) {
	if c.role == leader {
		// Queued commands die with the leadership; our own go to the next
		// leader (pending), forwarded ones are retried by their proposers.
		c.queue, c.queueBytes, c.acceptBuf, c.spareBuf = nil, 0, nil, nil
		for _, p := range c.pending {
			if p.sentTo == c.id {
				p.sent = false
			}
		}
		for _, in := range c.log {
			in.proposed, in.votes = false, 0
		}
		c.deferred, c.deferFrom, c.deferTo, c.leadVotes = nil, 1, 0, 0
	}
	if leaderID != c.leader {
		c.dropForwards() // addressed to the old leader; retryPending re-sends
	}
	c.role = follower
	c.leader = leaderID
	c.promises = nil
	c.forMembers = false
	c.probing = false
	c.electionElapsed = 0
	c.electionTimeout = c.randomTimeout()
	if c.campaigning && c.campaignWait == 0 {
		c.campaignBackoff()
	}
}

// electionTimedOut runs when a follower or candidate heard no leader for
// its randomized timeout.
func (c *core) electionTimedOut() {
	if c.role == candidate {
		c.becomeFollower(0)
	}
	if c.leader != 0 && c.leader != c.id {
		c.leaderTimeouts++
		c.lostLeader = c.leader
	}
	c.leader = 0 // no longer believed; probes from others are granted
	if c.campaigning {
		c.startElection()
		return
	}
	c.startProbe()
}

// startProbe asks every peer whether it, too, has lost the leader. The
// probe's ballot is the one phase 1 would use; nothing is persisted.
func (c *core) startProbe() {
	if !c.voter() {
		// Not a voter (a learner, removed, or joining): never stand for
		// election. A learner asks a member for the log instead.
		c.electionElapsed = 0
		c.electionTimeout = c.randomTimeout()
		c.learnerFetch()
		return
	}
	if c.odd { // core_odd.go: stands for no election
		c.electionElapsed = 0
		c.electionTimeout = c.randomTimeout()
		return
	}
	round, ok := c.nextRound()
	if !ok {
		// Ballot space used up (see nextRound): never stand again.
		c.electionElapsed = 0
		c.electionTimeout = c.randomTimeout()
		return
	}
	c.probing = true
	c.probeBallot = Ballot{Round: round, Node: c.id}
	c.probeVotes = c.bit(c.id)
	c.electionElapsed = 0
	c.electionTimeout = c.randomTimeout()
	if c.isQuorum(c.probeVotes, c.hist.latest()) {
		c.probing = false
		c.startElection()
		return
	}
	for _, p := range c.targets {
		if p != c.id && c.votesFrom(p) { // a learner's consent would not count
			c.send(Message{Type: MsgPrepare, To: p, Ballot: c.probeBallot, Index: c.chosen + 1, Probe: true, Chosen: c.chosen})
		}
	}
}

// heardLeader reports whether this node believes in a live leader: it is
// one (with a quorum), or it follows one it heard within ElectionTicks.
// Such a node refuses probes.
func (c *core) heardLeader() bool {
	switch c.role {
	case leader:
		return c.hasQuorum()
	case follower:
		return c.leader != 0 && c.electionElapsed < c.cfg.ElectionTicks
	}
	return false
}

// onProbe answers a probe; it changes nothing here.
func (c *core) onProbe(m Message) {
	// A node removed from the instances the prober would lead (by its
	// chosen index or ours) has no say in whether their leader is gone.
	removed := !c.votesIn(max(m.Index, c.chosen+1))
	c.send(Message{Type: MsgPromise, To: m.From, Ballot: m.Ballot, Probe: true, Reject: removed || c.heardLeader(), Promised: c.promised, Chosen: c.chosen})
}

func (c *core) onProbeReply(m Message) {
	if !c.probing || c.role != follower || m.Ballot != c.probeBallot || m.Reject {
		return
	}
	c.probeVotes |= c.bit(m.From)
	if c.isQuorum(c.probeVotes, c.hist.latest()) {
		c.probing = false
		c.startElection()
	}
}

// campaign makes this node run phase 1 now, skipping the probe, and
// again after a randomized backoff whenever it loses, until it has led
// once (becomeLeader clears campaigning) or stopCampaign is called.
func (c *core) campaign() {
	if c.role == leader || !c.voter() || c.odd {
		return
	}
	c.campaigning = true
	if c.role != candidate {
		c.startElection()
	}
}

// stopCampaign ends a campaign; an election already running continues.
func (c *core) stopCampaign() { c.campaigning, c.campaignWait = false, 0 }

// campaignBackoff is the randomized pause before a campaigning node that
// lost phase 1 tries again: two campaigning nodes pick different ticks
// with probability >= 1-1/E each round, and a phase 1 takes far less than
// a tick, so one of them wins.
func (c *core) campaignBackoff() {
	c.campaignWait = 1 + c.rng.Intn(c.cfg.ElectionTicks)
}

// startElection runs phase 1 with a ballot above every round seen, for all
// instances above our chosen index.
func (c *core) startElection() {
	if c.role == leader {
		c.becomeFollower(0)
	}
	if !c.voter() {
		return
	}
	if c.odd {
		c.stopCampaign()
		return
	}
	round, ok := c.nextRound()
	if !ok {
		// Ballot space used up: a ballot above MaxRound would wrap or be
		// refused by every peer. Stay a follower (learner).
		c.stopCampaign()
		return
	}
	c.role = candidate
	c.leader = 0
	c.probing = false
	c.campaignWait = 0
	c.maxRound = round
	c.ballot = Ballot{Round: c.maxRound, Node: c.id}
	c.electionElapsed = 0
	c.electionTimeout = c.randomTimeout()
	c.prepareFrom = c.chosen + 1
	c.prepareSent = 0
	c.persistPromise(c.ballot)
	c.promises = map[uint32]Message{c.id: c.promiseFor(c.ballot, c.prepareFrom, nil)}
	c.sendPrepares()
	if c.promiseQuorum() {
		c.becomeLeader()
	}
}

func (c *core) sendPrepares() {
	c.prepareTick = c.tick
	c.prepareSent++
	held := c.heldBallots()
	for _, p := range c.targets {
		// A learner's promise would not count (and is dropped): ask voters.
		if _, ok := c.promises[p]; !ok && c.votesFrom(p) {
			c.send(Message{Type: MsgPrepare, To: p, Ballot: c.ballot, Index: c.prepareFrom, Chosen: c.chosen, Entries: held})
		}
	}
}

// heldBallots lists, without values, the entries of this candidate's own
// promise (what becomeLeader will weigh with the others'): a Prepare
// carries them so an acceptor leaves out of its Promise every entry the
// candidate holds under an equal or higher ballot (promiseFor). Safe:
// becomeLeader takes the highest ballot reported at each index, its own
// promise included; an entry left out has a ballot at most the
// candidate's there, so it loses or ties, and a tie is the same value
// (a ballot proposes one value per index); the candidate's own entry
// also keeps the highest index reported. Why: a Promise carried every
// accepted entry above the candidate's chosen index, 4 MB under 64 KiB
// commands, which a slow host (-race, TestLargeCommandsUnderLoad) took
// longer to send and decode than the election timeout: no candidate got
// one in time, the next one's Prepares asked for it again, and nothing
// was chosen for minutes. Usually the candidate holds what the acceptors
// hold, so Promises are now small. Past the message limit it sends none
// (the acceptor then reports everything, as before).
func (c *core) heldBallots() []Entry {
	own := c.promises[c.id].Entries
	if len(own) == 0 || len(own) > c.lim.listLen {
		return nil
	}
	held := make([]Entry, len(own))
	for k, e := range own {
		held[k] = Entry{Index: e.Index, Ballot: e.Ballot}
	}
	return held
}

// prepareDue reports whether a candidate re-sends its Prepares to the
// voters that have not promised: RetransmitTicks after the first round,
// then twice as long after each (up to RetransmitTicks << maxResendShift).
// Why the backoff: every Prepare is answered with a Promise carrying each
// accepted entry above the candidate's chosen index, megabytes under 64
// KiB commands. Re-sent every RetransmitTicks, a slow receiver (-race on
// a loaded host: TestLargeCommandsUnderLoad) got a new copy of that
// Promise before it had decoded the last one (n3 -> n2: 10 Promises, 28
// MB, in 2 s); decoding the stale copies took the CPU, no candidate got
// its promises within its election timeout, and the next candidate's
// Prepares started it again: nothing was chosen for minutes.
func (c *core) prepareDue() bool {
	return c.tick-c.prepareTick >= int64(c.cfg.RetransmitTicks)<<min(max(c.prepareSent-1, 0), maxResendShift)
}

// promiseFor is this acceptor's phase-1b answer for b (already promised).
// It walks the instances held, not the index range up to c.last: an
// instance restored far above the rest (a forged Accept stored before
// inputs were checked) made that range astronomically long. held is what
// the candidate holds (its Prepare's entries, heldBallots): an entry of
// ours under a ballot at most the candidate's at that index is left out.
func (c *core) promiseFor(b Ballot, from uint64, held []Entry) Message {
	m := Message{Type: MsgPromise, From: c.id, Ballot: b, Chosen: c.chosen}
	lo := max(from, c.chosen+1)
	var has map[uint64]Ballot
	if len(held) > 0 {
		has = make(map[uint64]Ballot, len(held))
		for _, e := range held {
			has[e.Index] = e.Ballot
		}
	}
	for i, in := range c.log {
		if i >= lo && !in.ballot.IsZero() {
			if hb, ok := has[i]; ok && !hb.Less(in.ballot) {
				continue
			}
			m.Entries = append(m.Entries, Entry{Index: i, Ballot: in.ballot, Value: in.value})
		}
	}
	slices.SortFunc(m.Entries, func(a, b Entry) int { return cmp.Compare(a.Index, b.Index) })
	return m
}

func (c *core) onPromise(m Message) {
	if m.Reject {
		if !m.Promised.Less(c.ballot) {
			c.becomeFollower(0) // back off; randomized timeouts avoid duels
		}
		return
	}
	c.promises[m.From] = m
	if c.promiseQuorum() {
		c.becomeLeader()
	}
}

// becomeLeader finishes phase 1: every instance above the highest chosen
// index any promiser knows gets the highest-ballot value reported for it,
// or a Noop, re-proposed under our ballot.
func (c *core) becomeLeader() {
	maxChosen, from := c.chosen, c.id
	for _, id := range c.peers {
		if p, ok := c.promises[id]; ok && p.Chosen > maxChosen {
			maxChosen, from = p.Chosen, id
		}
	}
	start := maxChosen + 1
	end := start - 1
	best := make(map[uint64]Entry)
	for _, p := range c.promises {
		for _, e := range p.Entries {
			if e.Index < start {
				continue
			}
			if b, ok := best[e.Index]; !ok || b.Ballot.Less(e.Ballot) {
				best[e.Index] = e
			}
			end = max(end, e.Index)
		}
	}
	c.role = leader
	c.leader = c.id
	c.forMembers = false
	c.terms++
	c.stopCampaign()
	c.promises = nil
	c.heartbeatElapsed = 0
	c.queue, c.queueBytes, c.flush = nil, 0, false
	// Instances beyond the horizon wait until we know their members
	// (proposeDeferred); the rest are re-proposed now.
	// Holes are absent from deferred: a missing value is a Noop.
	c.deferred, c.deferFrom, c.deferTo = make(map[uint64][]byte, len(best)), start, end
	for i, e := range best {
		c.deferred[i] = e.Value
	}
	c.next = end + 1
	c.proposeDeferred()
	if c.role != leader {
		return
	}
	if maxChosen > c.chosen {
		if maxChosen > c.peerChosen {
			c.peerChosen, c.fetchFrom = maxChosen, from
		}
		c.maybeFetch(from)
	}
	// Our own commands go into our queue now, in seq order.
	for _, p := range c.pending {
		p.sent = false
	}
	c.retryPending()
	c.broadcast(Message{Type: MsgAccept, Ballot: c.ballot, Chosen: c.chosen})
	c.advanceChosen()
	c.maybePropose()
}
