package paxos

import (
	"bytes"
	"slices"

	"phxgo/wal"
)

// Acceptor and learner side of the core.

func (c *core) onPrepare(m Message) {
	if !c.votesIn(max(m.Index, c.chosen+1)) {
		// Removed: no configuration from m.Index on includes us.
		c.send(Message{Type: MsgPromise, To: m.From, Ballot: m.Ballot, Reject: true, Promised: c.promised, Chosen: c.chosen})
		return
	}
	if m.Ballot.Less(c.promised) {
		c.send(Message{Type: MsgPromise, To: m.From, Ballot: m.Ballot, Reject: true, Promised: c.promised})
		return
	}
	if c.promised != m.Ballot {
		c.persistPromise(m.Ballot)
		// Our old leader's accepts will be refused from now on.
		c.leaveLead(StepDownHigherBallot, m.From, m.Ballot)
	}
	p := c.promiseFor(m.Ballot, m.Index, m.Entries)
	p.To = m.From
	c.send(p)
}

func (c *core) onAccept(m Message) {
	if m.Ballot.Less(c.promised) && c.hist != nil && !c.votesIn(c.chosen+1) {
		// A learner votes nowhere, so no promise binds it: one it made as
		// a voter (or a candidate) before its demotion must not make it
		// refuse the leader it now learns from, or it would never learn
		// the leader's chosen index and never forward to it.
		c.learnFrom(m)
		return
	}
	if m.Ballot.Less(c.promised) {
		c.send(Message{Type: MsgAccepted, To: m.From, Ballot: m.Ballot, Reject: true, Promised: c.promised, Chosen: c.chosen})
		return
	}
	c.persistPromise(m.Ballot)
	if c.role != follower || c.leader != m.From {
		c.noteStepDown(StepDownHigherBallot, m.From, m.Ballot)
		c.becomeFollower(m.From)
	}
	c.electionElapsed = 0
	c.probing = false
	reply := Message{Type: MsgAccepted, To: m.From, Ballot: m.Ballot}
	if len(m.Entries) > 0 && !m.NoVote {
		reply.Indexes = make([]uint64, 0, len(m.Entries))
	}
	for _, e := range m.Entries {
		if e.Index > c.chosen {
			if !c.mayVote(e.Index) {
				if c.learnsAt(e.Index) {
					c.learnEntry(e, m.Ballot)
				}
				continue // not a voter there: no vote, no reply for it
			}
			in := c.inst(e.Index)
			if in.chosen {
				// Chosen here, above our chosen index: we saw its quorum
				// as the leader and stepped down before our chosen index
				// reached it. The new leader found our accepted value in
				// phase 1 and re-proposes it; it learns the instance is
				// chosen only from votes under its ballot, and when ours
				// is the one it lacks (two voters, or a third one down)
				// it would wait forever. Same value, so vote again.
				if m.NoVote || !bytes.Equal(in.value, e.Value) {
					continue
				}
				if in.voted != m.Ballot {
					in.ballot, in.voted = m.Ballot, m.Ballot
					c.persistAccepted(wal.Accepted{Index: e.Index, Ballot: m.Ballot, Value: e.Value})
				}
				reply.Indexes = append(reply.Indexes, e.Index)
				continue
			}
			if !in.voted.IsZero() && in.voted == m.Ballot && !m.NoVote {
				// A retransmit of our vote: its save is in this or an
				// earlier Ready, durable before this reply leaves. Saving
				// it again multiplied the disk writes by the retransmits
				// when the disk was the bottleneck (64 KiB commands).
				reply.Indexes = append(reply.Indexes, e.Index)
				continue
			}
			in.ballot, in.value = m.Ballot, e.Value
			a := wal.Accepted{Index: e.Index, Ballot: m.Ballot, Value: e.Value}
			if m.NoVote {
				if in.voted != m.Ballot {
					c.storeAccepted(a)
				}
				continue
			}
			in.voted = m.Ballot
			c.persistAccepted(a)
		}
		if !m.NoVote {
			reply.Indexes = append(reply.Indexes, e.Index)
		}
	}
	c.learnChosen(m.Chosen, m.Ballot, m.From)
	if m.NoVote && len(m.Entries) > 0 {
		return // nothing to answer: no vote, and the leader hears our heartbeat replies
	}
	if len(m.Entries) == 0 {
		// A heartbeat or a new chosen index: the answer only tells the
		// leader we are alive and how far we got, so once per tick is
		// enough (the leader announces every chosen index it reaches).
		if c.emptyAnswered == c.tick {
			return
		}
		c.emptyAnswered = c.tick
	}
	reply.Chosen = c.chosen
	c.send(reply)
}

// learnFrom follows the leader of an Accept below this learner's
// promise: it stores the entries its configuration makes it learn and
// the leader's chosen index, promises and answers nothing.
func (c *core) learnFrom(m Message) {
	if c.role != follower || c.leader != m.From {
		c.becomeFollower(m.From)
	}
	c.electionElapsed = 0
	for _, e := range m.Entries {
		if e.Index > c.chosen && c.learnsAt(e.Index) {
			c.learnEntry(e, m.Ballot)
		}
	}
	c.learnChosen(m.Chosen, m.Ballot, m.From)
}

// learnEntry stores an entry a learner is sent, like a NoVote one (no
// sync of its own, no answer): learnChosen then marks it chosen when the
// leader's chosen index passes it, so a learner follows the pipeline
// instead of fetching every entry.
func (c *core) learnEntry(e Entry, b Ballot) {
	in := c.inst(e.Index)
	if in.chosen || in.ballot == b {
		return
	}
	in.ballot, in.value = b, e.Value
	c.storeAccepted(wal.Accepted{Index: e.Index, Ballot: b, Value: e.Value})
}

// learnChosen advances our chosen index up to the leader's (chosen): an
// instance we accepted under the leader's own ballot holds the value that
// leader proposed there, hence the chosen one. Anything else is fetched.
func (c *core) learnChosen(chosen uint64, b Ballot, from uint32) {
	i := c.chosen
	for i < chosen {
		in := c.log[i+1]
		if in == nil || (!in.chosen && in.ballot != b) {
			break
		}
		in.chosen = true
		i++
	}
	c.setChosen(i)
	if c.chosen < chosen {
		c.maybeFetch(from)
	}
}

func (c *core) maybeFetch(from uint32) {
	if c.fetching || from == c.id || from == 0 {
		return
	}
	c.fetching, c.fetchTick = true, c.tick
	c.asked[from]++
	// A joining node asks for the members with every fetch: under load it
	// is always fetching, so joinTick alone could starve.
	c.send(Message{Type: MsgFetch, To: from, Index: c.chosen + 1, Probe: c.hist == nil})
}

// onFetch answers with chosen entries from m.Index on, up to FetchMaxBytes
// (at least one): compacted ones from the reader, the rest from memory.
func (c *core) onFetch(m Message) {
	if c.odd {
		return // core_odd.go: the fetcher asks another member
	}
	if c.answerCompacted(m) {
		return
	}
	reply := Message{Type: MsgLearn, To: m.From, Chosen: c.chosen, Index: m.Index}
	if m.Probe && c.hist != nil {
		reply.Meta = c.hist.encode() // a joining node asks for the members
	}
	size := 0
	i := m.Index
	if i <= c.stable && c.reader != nil {
		as, err := c.reader.Range(i, c.stable, c.cfg.FetchMaxBytes)
		if err == nil {
			for _, a := range as {
				if a.Index != i || len(reply.Entries) >= c.lim.listLen {
					break
				}
				reply.Entries = append(reply.Entries, Entry{Index: a.Index, Ballot: a.Ballot, Value: a.Value})
				size += len(a.Value)
				i++
			}
		}
		if i <= c.stable {
			c.send(reply)
			return
		}
	}
	// At most listLen entries: a run of Noops weighs nothing, and the
	// receiver drops a longer list (validateMessage).
	for ; i <= c.chosen && (size == 0 || size < c.cfg.FetchMaxBytes) && len(reply.Entries) < c.lim.listLen; i++ {
		in := c.log[i]
		if in == nil {
			break
		}
		reply.Entries = append(reply.Entries, Entry{Index: i, Ballot: in.ballot, Value: in.value})
		size += len(in.value)
	}
	c.send(reply)
}

// fetchExpired reports whether the fetch out (fetching) has gone
// unanswered long enough to ask again: RetransmitTicks, then twice as long
// after each miss in a row (up to RetransmitTicks << maxResendShift), as
// for Accepts and Prepares. Why: an answer is up to FetchMaxBytes read
// from the peer's wal; re-asked every RetransmitTicks, a slow peer (-race
// on a loaded host, TestLargeCommandsUnderLoad) spent its run loop reading
// the same range for copies of the request and answered nothing else.
func (c *core) fetchExpired() bool {
	if c.tick-c.fetchTick < int64(c.cfg.RetransmitTicks)<<min(c.fetchMiss, maxResendShift) {
		return false
	}
	c.fetchMiss++
	return true
}

func (c *core) onLearn(m Message) {
	c.fetching = false
	// A history covers the changes up to its sender's chosen index; ours
	// must cover every entry handed out already.
	if len(m.Meta) > 0 && (c.hist != nil || m.Chosen >= c.applied) {
		_ = c.adoptMeta(m.Meta) // a bad one is ignored; another seed answers
	}
	progress, superseded := false, false
	for _, e := range m.Entries {
		if e.Index <= c.chosen {
			continue
		}
		if e.Index != c.chosen+1 {
			break
		}
		in := c.inst(e.Index)
		if c.role == leader && in.proposed && !bytes.Equal(in.value, e.Value) {
			// Another value chosen where we proposed: a higher ballot
			// has led (our phase 1 covered this index, so a value chosen
			// below our ballot is the one we re-proposed). Our chosen
			// notices are trusted as "accepted under our ballot is
			// chosen" (learnChosen), which no longer holds here: a
			// follower holding our value would mark it chosen.
			superseded = true
		}
		in.ballot, in.value, in.chosen = e.Ballot, e.Value, true
		c.persistAccepted(wal.Accepted{Index: e.Index, Ballot: e.Ballot, Value: e.Value})
		c.setChosen(e.Index)
		progress = true
	}
	if progress {
		// Only an answer that helped ends the backoff: an empty one from
		// another peer says nothing of a slow one, which would otherwise
		// be asked again at once (TestReviewFetchRotationKeepsBackoff).
		c.fetchMiss = 0
	}
	if superseded {
		c.leaveLead(StepDownSuperseded, m.From, Ballot{})
	}
	if c.role == leader {
		c.advanceChosen()
		c.maybePropose()
	}
	if progress && c.chosen < m.Chosen {
		c.maybeFetch(m.From)
	} else if !progress && m.Chosen < c.peerChosen && m.From == c.fetchFrom {
		// That peer knows less than we were told: try the next one.
		c.fetchFromNext()
	}
}

// fetchFromNext makes the target after fetchFrom (in id order, wrapping)
// the peer the next fetch asks.
func (c *core) fetchFromNext() {
	k := len(c.targets)
	if k == 0 {
		return
	}
	pos, found := slices.BinarySearch(c.targets, c.fetchFrom)
	if found {
		pos++
	}
	c.fetchFrom = c.targets[pos%k]
}

// votesIn reports whether this acceptor is a voter of some configuration
// that governs an instance >= j.
func (c *core) votesIn(j uint64) bool {
	if c.hist == nil {
		return false
	}
	for _, m := range c.hist.from(j) {
		if m.IsVoter(c.id) {
			return true
		}
	}
	return false
}
