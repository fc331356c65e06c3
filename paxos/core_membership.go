package paxos

import (
	"fmt"
	"slices"
)

// The core's side of membership (rules in doc.go, "Membership"):
//
//   - every quorum is counted among the voters (members but learners) of
//     the configuration that governs the instance (votes are bit masks by
//     position in c.peers, an append-only list of every node id this core
//     has known, so positions never move while it runs);
//   - a chosen change is validated and recorded when the core hands the
//     entry out (ready), on every node in the same order, and the new
//     history leaves with that Ready as Meta, durable before the entry is
//     applied;
//   - the leader proposes instance j only when j <= applied+Alpha (it then
//     knows the members of j: applied, not chosen, as changes are recorded
//     at hand-out) and its phase-1 promisers are a majority of them;
//     otherwise it defers (becomeLeader) or runs phase 1 again;
//   - an acceptor refuses to vote in an instance whose configuration, as it
//     knows it, excludes it, and refuses Prepares and probes from
//     non-voters; a node that is not a voter (a learner, or no member)
//     neither probes nor campaigns, and a leader steps down once its
//     removal or demotion is active;
//   - a learner is sent every Accept (as NoVote) and chosen index and
//     stores the entries without voting; its Promises and votes (which a
//     correct learner never sends) are dropped (DropLearnerVote).

// window is the leader's bound on instances in flight: Window, but never
// above Alpha. The proposal loops also stop at the horizon.
func (c *core) window() int { return min(c.cfg.Window, Alpha) }

// horizon is the highest instance whose configuration this core knows:
// applied+Alpha, as a change is recorded when its entry is handed out
// (ready), not when it is chosen. Within one step chosen may run ahead of
// applied (a vote or a Learn completes a run of instances), and a change
// among them is unknown until the Ready: with chosen+Alpha a leader
// proposed up to 463 under the members before a change at 399 that it had
// just seen chosen (applied 396, chosen 401), counting the quorum among
// the wrong voters. TestSimLearners seed 614 (with a removed node
// fetching) stalled there: the change left the leader the only voter of
// 463, but the instance waited for the vote of the removed node.
func (c *core) horizon() uint64 { return c.applied + Alpha }

// known adds id to c.peers (append-only positions).
func (c *core) known(id uint32) {
	if _, ok := c.peerPos[id]; ok {
		return
	}
	if len(c.peers) >= 64 {
		panic("paxos: more than 64 node ids known to one core")
	}
	c.peerPos[id] = len(c.peers)
	c.peers = append(c.peers, id)
	c.lastHeard = append(c.lastHeard, c.tick)
	c.ackAt = append(c.ackAt, 0)
}

// member reports whether this node is in the latest configuration (a
// voter or a learner).
func (c *core) member() bool { return c.hist != nil && c.hist.latest().Has(c.id) }

// voter reports whether this node votes in the latest configuration (a
// member, not a learner).
func (c *core) voter() bool { return c.hist != nil && c.hist.latest().IsVoter(c.id) }

func (c *core) cfgAt(j uint64) *Membership { return c.hist.at(j) }

func (c *core) mask(m *Membership) uint64 {
	if v, ok := c.masks[m.Index]; ok {
		return v
	}
	var v uint64
	for _, x := range m.Members {
		c.known(x.ID)
		if !x.Learner {
			v |= 1 << c.peerPos[x.ID]
		}
	}
	c.masks[m.Index] = v
	return v
}

// isQuorum reports whether votes hold a majority of m's voters (a
// learner's bit, if set, is masked out).
func (c *core) isQuorum(votes uint64, m *Membership) bool {
	return popcount(votes&c.mask(m)) >= m.Voters()/2+1
}

func (c *core) bit(id uint32) uint64 {
	c.known(id)
	return 1 << c.peerPos[id]
}

// historyChanged refreshes what depends on the members.
func (c *core) historyChanged() {
	clear(c.masks)
	for _, it := range c.hist.items {
		for _, m := range it.Members {
			c.known(m.ID)
		}
	}
	c.metaDirty = true
	c.refreshTargets()
	if !c.voter() {
		c.stopCampaign()
		if c.role == candidate {
			c.becomeFollower(0)
		}
	}
	c.checkRemoved()
}

// checkRemoved makes a leader whose removal or demotion is active step down.
func (c *core) checkRemoved() {
	if c.role == leader && !c.voter() && c.chosen+1 >= c.hist.latest().Active {
		c.leaveLead(StepDownRemoved, 0, Ballot{})
	}
}

// refreshTargets recomputes who this node talks to: every member of a
// configuration that governs an instance above chosen (joining: the seeds).
func (c *core) refreshTargets() {
	var ids []uint32
	if c.hist == nil {
		ids = append(ids, c.cfg.Peers...)
	} else {
		for _, m := range c.hist.from(c.chosen + 1) {
			ids = append(ids, m.IDs()...)
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	var ts []uint32
	for _, id := range ids {
		if id != c.id {
			c.known(id)
			ts = append(ts, id)
		}
	}
	if !slices.Equal(ts, c.targets) {
		c.targets, c.targetsDirty = ts, true
	}
	c.targetsAt = c.chosen
}

// recordChosen validates and records the membership changes in a chosen
// value (at index i), in order.
func (c *core) recordChosen(i uint64, v []byte) {
	if c.hist == nil || len(v) == 0 {
		return
	}
	cmds, err := decodeValue(v)
	if err != nil {
		return
	}
	for _, cmd := range cmds {
		if cmd.Flags&flagMembership == 0 {
			continue
		}
		ch, err := decodeChange(cmd.Data)
		if err != nil {
			continue
		}
		n := len(c.hist.items)
		if c.hist.apply(i, ch) && len(c.hist.items) > n {
			c.historyChanged()
		}
	}
}

// adoptMeta merges a peer's (or a snapshot's) history into ours; a joining
// node adopts it whole and becomes a regular node.
func (c *core) adoptMeta(b []byte) error {
	h, err := decodeHistory(b)
	if err != nil {
		return err
	}
	if err := c.checkPeerHistory(h); err != nil {
		return err
	}
	if c.hist == nil {
		c.hist = h
	} else if changed, err := c.hist.merge(h); err != nil || !changed {
		return err
	}
	c.historyChanged()
	return nil
}

// joinTick asks a seed for the history while this node does not know it.
func (c *core) joinTick() {
	if c.hist != nil || len(c.targets) == 0 || c.tick-c.joinAsked < int64(c.cfg.RetransmitTicks) {
		return
	}
	c.joinAsked = c.tick
	to := c.targets[int(c.tick/int64(c.cfg.RetransmitTicks))%len(c.targets)]
	c.asked[to]++
	c.send(Message{Type: MsgFetch, To: to, Index: c.chosen + 1, Probe: true})
}

// learnerFetch: a learner that heard no leader for its election timeout
// asks a member, in turn, for the log from its chosen index on. It does
// not probe (it may not campaign), and a leader added by a change it has
// not learned is a stranger to it whose messages it drops: without this a
// learner that missed that change would wait for it forever. The Learn
// answer carries the change (and the sender's chosen index), so it then
// knows and follows the new leader. A node that the latest change it
// knows removed asks too: a later change it missed may have added it
// back, and the leader of that configuration is a stranger to it
// (TestSimMembership/3+2nodes seed 289 waited forever). What it learns is
// chosen entries, as any fetch; it votes only where the history it then
// records makes it a voter. A member that no longer knows it drops the
// request (a stranger).
func (c *core) learnerFetch() {
	if c.hist == nil || len(c.targets) == 0 {
		return
	}
	to := c.targets[int(c.tick)%len(c.targets)]
	c.fetching, c.fetchTick = true, c.tick
	c.asked[to]++
	c.send(Message{Type: MsgFetch, To: to, Index: c.chosen + 1})
}

// mayVote reports whether this acceptor votes in instance j: it knows
// the members and the configuration that governs j (as far as it knows)
// has it as a voter.
func (c *core) mayVote(j uint64) bool { return c.hist != nil && c.cfgAt(j).IsVoter(c.id) }

// learnsAt reports whether this node is a learner in instance j's
// configuration: it stores the leader's entries there without voting.
func (c *core) learnsAt(j uint64) bool { return c.hist != nil && c.cfgAt(j).IsLearner(c.id) }

// votesFrom reports whether id is a voter of a configuration that
// governs some instance above our chosen index: only such nodes may make
// this acceptor promise, or ask it to, and only their promises and votes
// count (a learner's are dropped as DropLearnerVote).
func (c *core) votesFrom(id uint32) bool {
	if c.hist == nil {
		return false
	}
	for _, m := range c.hist.from(c.chosen + 1) {
		if m.IsVoter(id) {
			return true
		}
	}
	return false
}

// learnerVote reports why m, a Promise or a vote from a node that is no
// voter of any configuration above our chosen index (a learner), must be
// dropped, or nil. A correct learner sends neither (it is sent no
// Prepare and votes on no Accept); one that does is broken or forged,
// and its promise could carry a ballot or chosen index that would
// disturb the election, so it is dropped whole and counted.
func (c *core) learnerVote(m *Message) *BadMessageError {
	if c.hist == nil || c.votesFrom(m.From) {
		return nil
	}
	switch {
	case m.Type == MsgPromise && !m.Probe:
		return badMsg(DropLearnerVote, "promise from non-voter %d", m.From)
	case m.Type == MsgAccepted && (len(m.Indexes) > 0 || m.Reject):
		return badMsg(DropLearnerVote, "vote from non-voter %d", m.From)
	}
	return nil
}

// promiseQuorum reports whether the promises gathered so far are a
// majority of every configuration that governs an instance phase 1
// covers and whose members are known (the rest are checked in
// proposeDeferred).
func (c *core) promiseQuorum() bool {
	var votes uint64
	for id := range c.promises {
		votes |= c.bit(id)
	}
	for _, m := range c.hist.from(c.prepareFrom) {
		if !c.isQuorum(votes, m) {
			return false
		}
	}
	c.leadVotes = votes
	return true
}

// canLead reports whether this leader's phase-1 promisers are a majority
// of the members of instance j (j <= horizon). If not, it runs phase 1
// again, with the new members, and returns false.
func (c *core) canLead(j uint64) bool {
	if c.isQuorum(c.leadVotes, c.cfgAt(j)) {
		return true
	}
	c.startElection()
	c.forMembers = c.role == candidate
	return false
}

// proposeDeferred proposes the instances phase 1 recovered beyond the
// horizon, as the horizon reaches them.
func (c *core) proposeDeferred() {
	for c.role == leader && c.deferFrom <= c.deferTo && c.deferFrom <= c.horizon() {
		j := c.deferFrom
		if !c.canLead(j) {
			return
		}
		c.proposeAt(j, c.deferred[j])
		delete(c.deferred, j)
		c.deferFrom++
	}
}

// flushChange fills the pipeline with Noops while a chosen change is not
// active yet, so it becomes active without waiting for client traffic.
func (c *core) flushChange() {
	act := c.hist.latest().Active
	for c.role == leader && len(c.queue) == 0 && c.next < act && c.inflight() < c.window() && c.next <= c.horizon() && c.deferFrom > c.deferTo {
		if !c.canLead(c.next) {
			return
		}
		c.proposeAt(c.next, nil)
		c.next++
	}
}

// checkPeerHistory checks a history that came from a peer (a seed's
// answer, a snapshot) before this core adopts it: it must be one that
// history.apply could have built (genesis at index 0, each change active
// Alpha later, 1 to 64 distinct members sorted by id), and, merged with
// what this core knows, name at most 64 node ids; a forged one with more
// would have made known() panic.
func (c *core) checkPeerHistory(h *history) error {
	ids := make(map[uint32]bool, len(c.peers))
	for _, p := range c.peers {
		ids[p] = true
	}
	for k, it := range h.items {
		if k == 0 && (it.Index != 0 || it.Active != 1) || k > 0 && (it.Index == 0 || it.Index > MaxIndex || it.Active != it.Index+Alpha) {
			return fmt.Errorf("%w: membership item %d: index %d active %d", ErrBadValue, k, it.Index, it.Active)
		}
		if len(it.Members) == 0 || len(it.Members) > 64 {
			return fmt.Errorf("%w: membership item %d: %d members", ErrBadValue, k, len(it.Members))
		}
		for j, m := range it.Members {
			if j > 0 && m.ID <= it.Members[j-1].ID {
				return fmt.Errorf("%w: membership item %d: member ids not ascending", ErrBadValue, k)
			}
			ids[m.ID] = true
		}
	}
	if len(ids) > 64 {
		return fmt.Errorf("%w: membership history names %d node ids, at most 64", ErrBadValue, len(ids))
	}
	return nil
}
