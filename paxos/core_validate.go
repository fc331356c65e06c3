package paxos

import "fmt"

// The core's trust boundary: every peer message passes admit before the
// core acts on it (rules and reasons in message.go and doc.go, "Hostile
// input"). validateMessage checks the message alone; admit adds what
// needs this core's state: who may talk to it, how far above the rounds
// it knows a ballot may be, and how far above its chosen index it stores
// an instance.

// dropNote describes the latest dropped message for the driver's log.
type dropNote struct {
	reason DropReason
	msg    string
	detail string
}

func coreLimits(cfg coreConfig) msgLimits {
	value := cfg.MaxValueBytes
	if value <= 0 {
		value = DefaultConfig().MaxValueBytes
	}
	ahead := cfg.MaxIndexAhead
	if ahead == 0 {
		ahead = DefaultMaxIndexAhead
	}
	return limitsOf(max(value, cfg.BatchMaxBytes), ahead)
}

// admit reports why m must be dropped, or nil. It changes nothing but the
// round hint (a ballot beyond reach raises it to reach at most).
func (c *core) admit(m *Message) *BadMessageError {
	if err := validateMessage(m, c.lim); err != nil {
		return err
	}
	if m.To != c.id || m.From == c.id {
		return badMsg(DropBadSender, "from %d to %d at node %d", m.From, m.To, c.id)
	}
	if _, ok := c.peerPos[m.From]; !ok {
		// Not a member of any configuration we know, nor an initial
		// peer. A node added by a change we have not learned could be
		// one, but we could not answer it anyway (the transport only
		// dials members we know) and our election timer, left running,
		// makes us probe the members we know, whose answers carry their
		// chosen index: we fetch the change from them. Registering
		// strangers would let anyone fill the 64 peer positions, after
		// which a real new member could not be counted.
		return badMsg(DropStranger, "from %d", m.From)
	}
	if m.Type == MsgPrepare || m.Type == MsgAccept {
		// These make us promise (persist) their ballot.
		if reach := c.roundReach(); m.Ballot.Round > reach {
			c.maxRound = max(c.maxRound, reach)
			return badMsg(DropBallotRange, "%s round %d beyond reach %d (highest seen %d, promised %d)",
				m.Type, m.Ballot.Round, reach, c.maxRound, c.promised.Round)
		}
	}
	switch m.Type {
	case MsgAccept:
		for _, e := range m.Entries {
			if e.Index > c.chosen+c.lim.ahead {
				return badMsg(DropIndexRange, "accept of index %d, chosen %d + %d ahead", e.Index, c.chosen, c.lim.ahead)
			}
		}
	case MsgPromise:
		// A candidate re-proposes (or fills with Noops) every index up to
		// the highest reported: bound that run.
		base := max(c.chosen, m.Chosen)
		for _, e := range m.Entries {
			if e.Index > base+c.lim.ahead {
				return badMsg(DropIndexRange, "promise reports index %d, chosen %d + %d ahead", e.Index, base, c.lim.ahead)
			}
		}
	}
	return nil
}

// drop counts a refused message and keeps it for the driver's log.
func (c *core) drop(m *Message, err *BadMessageError) {
	c.dropped[err.Reason]++
	c.lastDrop = dropNote{reason: err.Reason, msg: m.String(), detail: err.Detail}
}

// roundReach is the highest round this node adopts from a Prepare or an
// Accept: MaxRoundStep above the highest round it saw or promised, and
// never above MaxRound.
func (c *core) roundReach() uint64 {
	base := max(c.maxRound, c.promised.Round)
	if base >= MaxRound-MaxRoundStep {
		return MaxRound
	}
	return base + MaxRoundStep
}

// nextRound is the round of this node's next ballot: one above every
// round it saw or promised. ok is false once that would pass MaxRound:
// the node then never campaigns again (Status.BallotExhausted), which
// keeps every promise it made and every ballot it used below MaxRound+1.
func (c *core) nextRound() (round uint64, ok bool) {
	base := max(c.maxRound, c.promised.Round)
	if base >= MaxRound {
		c.exhausted = true
		return 0, false
	}
	return base + 1, true
}

func (e dropNote) String() string { return fmt.Sprintf("%s: %s (%s)", e.reason, e.detail, e.msg) }
