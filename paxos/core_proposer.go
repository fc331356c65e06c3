package paxos

import (
	"slices"

	"phxgo/wal"
)

// Proposer side of the core: the stable leader's pipelined and batched
// phase 2, and forwarding of local commands. Elections are in
// core_election.go.

// pendingSeqs lists pending seqs in order (determinism: map order is random).
func (c *core) pendingSeqs() []uint64 {
	seqs := make([]uint64, 0, len(c.pending))
	for s := range c.pending {
		seqs = append(seqs, s)
	}
	slices.Sort(seqs)
	return seqs
}

func (c *core) inflight() int { return int(c.next - 1 - c.chosen) }

func (c *core) enqueue(cmd []byte) {
	c.queue = append(c.queue, cmd)
	c.queueBytes += len(cmd)
}

// maybePropose starts new instances from the queue. An idle pipeline sends
// at once (latency); a busy one waits for a full batch or the linger
// (flush), so concurrent commands share one value.
func (c *core) maybePropose() {
	if c.role != leader {
		return
	}
	c.proposeDeferred()
	for c.role == leader && len(c.queue) > 0 && c.inflight() < c.window() && c.next <= c.horizon() && c.deferFrom > c.deferTo &&
		(c.inflight() == 0 || c.flush || c.queueBytes >= c.cfg.BatchMaxBytes) {
		if !c.canLead(c.next) {
			return
		}
		n, size := 0, 0
		for n < len(c.queue) && (n == 0 || size+len(c.queue[n]) <= c.cfg.BatchMaxBytes) {
			size += len(c.queue[n])
			n++
		}
		v := encodeValue(c.queue[:n])
		c.valuesProposed++
		c.cmdsProposed += uint64(n)
		c.bytesProposed += uint64(len(v))
		c.queue = c.queue[n:]
		c.queueBytes -= size
		c.proposeAt(c.next, v)
		c.next++
	}
	if len(c.queue) == 0 {
		c.flush = false
		c.queue = nil
	}
	c.flushChange()
}

// proposeAt proposes v at index i under our ballot; our own acceptor
// accepts it in the same Ready (durable before anyone hears of it).
func (c *core) proposeAt(i uint64, v []byte) {
	if i <= c.chosen {
		// Chosen already, perhaps by a snapshot that deleted the entry
		// (inst would make a fresh one): a vote here would be a log entry
		// at or below the stable index that is never dropped.
		return
	}
	in := c.inst(i)
	if in.chosen {
		return
	}
	in.ballot, in.value = c.ballot, v
	in.proposed = true
	in.votes = c.bit(c.id)
	in.sentTick, in.resends = c.tick, 0
	c.persistAccepted(wal.Accepted{Index: i, Ballot: c.ballot, Value: v})
	c.acceptBuf = append(c.acceptBuf, Entry{Index: i, Ballot: c.ballot, Value: v})
	if c.isQuorum(in.votes, c.cfgAt(i)) {
		// A one-member cluster: our own vote is the majority. The
		// chosen index still leaves only after this Ready's save.
		in.chosen = true
		c.advanceChosen()
	}
}

// sendProposals sends the instances proposed since the last Ready (Early:
// see Ready). Thrifty, a member of the instances' configuration is asked
// to vote only if it is one of the leader's voters (pickVoters); the
// rest get the instances with NoVote, and retransmitAccepts asks them if
// a voter falls silent.
func (c *core) sendProposals() {
	es := c.acceptBuf
	c.acceptBuf = nil
	voters := ^uint64(0) // by position; all ones: everyone votes
	first, last := c.cfgAt(es[0].Index), c.cfgAt(es[len(es)-1].Index)
	if c.cfg.Thrifty && first == last {
		voters = c.pickVoters(first)
	}
	var spares uint64
	for _, p := range c.targets {
		// A learner is always a spare: it stores the entries, never votes.
		if p != c.id && (voters&c.bit(p) == 0 || !first.IsVoter(p) && !last.IsVoter(p)) {
			spares |= c.bit(p)
		}
	}
	for _, e := range es {
		if in := c.log[e.Index]; in != nil {
			in.ackMark = c.ackSeq
			in.spare |= spares
		}
	}
	for _, p := range c.targets {
		if p == c.id {
			continue
		}
		spare := spares&c.bit(p) != 0
		for _, part := range c.chunkEntries(es) {
			m := Message{Type: MsgAccept, From: c.id, To: p, Ballot: c.ballot, Entries: part, NoVote: spare}
			if spare {
				// Off the commit's path: held until the instances are
				// chosen, then sent with the chosen index (flushSpares), one
				// message where an Accept and a chosen notice went.
				if c.spareBuf == nil {
					c.spareBuf = make(map[uint32][]Entry)
				}
				c.spareBuf[p] = append(c.spareBuf[p], part...)
			} else {
				// Early, so it announces only what is chosen with our own
				// accepts durable: stable (see Ready).
				m.Chosen = c.stable
				c.early = append(c.early, m)
			}
		}
	}
	c.chosenSent = max(c.chosenSent, c.stable)
}

// flushSpares sends the NoVote Accepts held for spares (sendProposals)
// whose instances are chosen, all of them when the pipeline is empty or
// a spare's hold reaches FetchMaxBytes, with the chosen index;
// it returns the peers (by bit) that got one. Why hold them: a spare
// stores the entries without voting, and applies them only once it
// hears they are chosen; sent at once, each value cost a spare two
// messages (the entries, then the chosen notice) and the leader two
// writes. They leave with the Messages of this Ready (after its save:
// our own accepts are durable), so they may announce everything chosen.
func (c *core) flushSpares() (told uint64) {
	if len(c.spareBuf) == 0 {
		return 0
	}
	if c.role != leader {
		c.spareBuf = nil
		return 0
	}
	for p := range c.spareBuf {
		if !slices.Contains(c.targets, p) {
			delete(c.spareBuf, p) // removed: it hears from us no more
		}
	}
	for _, p := range c.targets {
		es := c.spareBuf[p]
		if len(es) == 0 {
			continue
		}
		n, size := 0, 0
		for i, e := range es {
			size += len(e.Value)
			if e.Index <= c.chosen {
				n = i + 1
			}
		}
		if c.inflight() == 0 || size >= c.cfg.FetchMaxBytes {
			n = len(es)
		}
		if n == 0 {
			continue
		}
		for _, part := range c.chunkEntries(es[:n]) {
			c.send(Message{Type: MsgAccept, To: p, Ballot: c.ballot, Entries: part, NoVote: true, Chosen: c.chosen})
		}
		if n == len(es) {
			delete(c.spareBuf, p)
		} else {
			// A copy: the sent entries' array stays with their messages,
			// and appends must not keep their values alive.
			c.spareBuf[p] = slices.Clone(es[n:])
		}
		told |= c.bit(p)
	}
	return told
}

// unholdSpare drops from p's held NoVote Accepts the instances sent
// (ascending in both lists): a retransmit asks p to vote on them, and
// sending them again once chosen would only repeat their values.
func (c *core) unholdSpare(p uint32, sent []Entry) {
	held := c.spareBuf[p]
	if len(held) == 0 {
		return
	}
	kept := held[:0:0]
	j := 0
	for _, e := range held {
		for j < len(sent) && sent[j].Index < e.Index {
			j++
		}
		if j < len(sent) && sent[j].Index == e.Index {
			continue
		}
		kept = append(kept, e)
	}
	if len(kept) == 0 {
		delete(c.spareBuf, p)
		return
	}
	c.spareBuf[p] = kept
}

// chunkEntries splits es into runs of at most FetchMaxBytes of values (at
// least one entry each), one Accept each. Why: everything proposed since
// the last Ready, or every instance due for a retransmit, can be a whole
// window of batches (64 x 256 KiB); in one message that outgrew gRPC's
// receive limit (4 MiB by default), the peer's stream broke, the message
// was lost, and its retransmit was as large: under 64 KiB commands the
// followers never voted again. Accepts are independent per entry, and the
// core already copes with any of them lost or reordered.
func (c *core) chunkEntries(es []Entry) [][]Entry {
	return chunkBySize(es, c.cfg.FetchMaxBytes, func(e Entry) int { return len(e.Value) })
}

// chunkBySize splits xs into consecutive runs whose sizes add up to at
// most limit, except that every run holds at least one element.
func chunkBySize[T any](xs []T, limit int, size func(T) int) [][]T {
	var parts [][]T
	start, sum := 0, 0
	for i, x := range xs {
		n := size(x)
		if i > start && sum+n > limit {
			parts = append(parts, xs[start:i])
			start, sum = i, 0
		}
		sum += n
	}
	return append(parts, xs[start:])
}

// pickVoters returns the positions of the members of m that the leader
// asks to vote: with its own vote, just a majority of m. The set sticks
// (a voter switch leaves votes in flight from both, which would flip it
// back and forth) until m changes or retransmitAccepts drops a silent
// voter; it is then refilled with the members whose latest vote is the
// most recent (ties: lower id).
func (c *core) pickVoters(m *Membership) uint64 {
	need := m.Voters()/2 + 1
	self := uint64(0)
	if m.IsVoter(c.id) {
		need--
		self = c.bit(c.id)
	}
	others := c.mask(m) &^ self
	if c.voterCfg == m && c.voterSet&^others == 0 && popcount(c.voterSet) == need {
		return c.voterSet | self
	}
	keep := c.voterSet & others
	if c.voterCfg != m || popcount(keep) > need {
		keep = 0
	}
	cands := make([]uint32, 0, len(m.Members))
	for _, mb := range m.Members {
		if b := c.bit(mb.ID); others&b != 0 && keep&b == 0 {
			cands = append(cands, mb.ID)
		}
	}
	// Silent voters last, then the most recent vote first, then lower id.
	slices.SortFunc(cands, func(a, b uint32) int {
		sa, sb := c.suspect&c.bit(a) != 0, c.suspect&c.bit(b) != 0
		ra, rb := c.ackAt[c.peerPos[a]], c.ackAt[c.peerPos[b]]
		switch {
		case sa != sb && sb:
			return -1
		case sa != sb:
			return 1
		case ra > rb:
			return -1
		case ra < rb:
			return 1
		}
		return int(a) - int(b)
	})
	for _, id := range cands[:min(need-popcount(keep), len(cands))] {
		keep |= c.bit(id)
	}
	c.voterCfg, c.voterSet = m, keep
	return keep | self
}

// maxResendShift caps the retransmit backoff at RetransmitTicks << 3 (0.8
// s with the defaults). Why a backoff: when the disks are the bottleneck
// (64 KiB commands), an instance stays open past RetransmitTicks because
// its votes are queued behind earlier saves, and resending the whole open
// window every RetransmitTicks only added to the queue.
const maxResendShift = 3

// retransmitAccepts re-sends instances unchosen after RetransmitTicks to
// every member without a vote, spares included. Thrifty, a voter asked
// that has sent no vote at all since (it died or is cut off) is dropped
// from the voters, so the next instances ask a spare instead.
func (c *core) retransmitAccepts() {
	per := make(map[uint32][]Entry)
	// Instances are proposed only up to the horizon (proposeDeferred,
	// window), while next may lie far beyond it after phase 1 (a promiser
	// far ahead): do not walk that range.
	for i := c.chosen + 1; i < c.next && i <= c.horizon(); i++ {
		in := c.log[i]
		if in == nil || !in.proposed || in.chosen || c.tick-in.sentTick < int64(c.cfg.RetransmitTicks)<<min(in.resends, maxResendShift) {
			continue
		}
		in.sentTick = c.tick
		in.resends++
		m := c.cfgAt(i)
		if in.spare != 0 {
			silent := c.silentVoters(in, m)
			c.voterSet &^= silent
			c.suspect |= silent
			in.spare = 0
		}
		for _, p := range c.targets {
			if b := c.bit(p); in.votes&b == 0 && m.IsVoter(p) {
				per[p] = append(per[p], Entry{Index: i, Ballot: c.ballot, Value: in.value})
			}
		}
	}
	for _, p := range c.targets {
		if es := per[p]; len(es) > 0 {
			c.unholdSpare(p, es)
			for _, part := range c.chunkEntries(es) {
				c.send(Message{Type: MsgAccept, To: p, Ballot: c.ballot, Chosen: c.chosen, Entries: part})
			}
		}
	}
}

// silentVoters returns the members asked to vote on in (not spared, not
// this node) that have not voted on anything since it was sent.
func (c *core) silentVoters(in *instance, m *Membership) uint64 {
	var silent uint64
	for _, mb := range m.Members {
		b := c.bit(mb.ID)
		if mb.ID == c.id || mb.Learner || in.spare&b != 0 || in.votes&b != 0 {
			continue
		}
		if c.ackAt[c.peerPos[mb.ID]] <= in.ackMark {
			silent |= b
		}
	}
	return silent
}

func (c *core) onAccepted(m Message) {
	if m.Reject {
		if c.role != follower && c.ballot.Less(m.Promised) {
			c.leaveLead(StepDownRejected, m.From, m.Promised)
		}
		return
	}
	if c.role != leader || m.Ballot != c.ballot {
		return
	}
	bit := c.bit(m.From)
	if len(m.Indexes) > 0 {
		c.ackSeq++
		c.ackAt[c.peerPos[m.From]] = c.ackSeq
		c.suspect &^= bit
	}
	for _, i := range m.Indexes {
		in := c.log[i]
		if in == nil || !in.proposed || in.chosen {
			continue
		}
		in.votes |= bit
		if c.isQuorum(in.votes, c.cfgAt(i)) {
			in.chosen = true
		}
	}
	c.advanceChosen()
	c.maybePropose()
}

func (c *core) advanceChosen() {
	i := c.chosen
	for {
		in := c.log[i+1]
		if in == nil || !in.chosen {
			break
		}
		i++
	}
	c.setChosen(i)
}

// sendPending hands a local command to the current leader (ourselves
// included); without a known leader it waits for retryPending.
func (c *core) sendPending(p *pendingCmd) {
	switch {
	case c.role == leader:
		c.enqueue(p.enc)
	case c.leader != 0:
		c.forwardBuf = append(c.forwardBuf, p.enc)
		c.forwardBytes += len(p.enc)
	default:
		return
	}
	p.sent, p.sentTo, p.sentTick = true, c.leader, c.tick
}

// retryPending re-sends local commands that were never sent, were sent to a
// leader that is no longer ours, or were forwarded long ago (a lost
// Forward). A command can thus be chosen twice; appliers drop the repeat.
func (c *core) retryPending() {
	if c.leader == 0 {
		return
	}
	for _, seq := range c.pendingSeqs() {
		p := c.pending[seq]
		if !p.sent || p.sentTo != c.leader ||
			(p.sentTo != c.id && c.tick-p.sentTick >= int64(c.cfg.RetryTicks)) {
			c.sendPending(p)
		}
	}
	c.maybePropose()
}
