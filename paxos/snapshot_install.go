package paxos

import "phxgo/wal"

// Snapshot catch-up. Once a node compacted its log (compact.go), a peer
// that fetches below its FirstIndex cannot be sent those entries; it gets
// the base snapshot instead, the engine snapshot right after FirstIndex-1
// that was stored together with the truncation, and fetches what follows
// as usual:
//
//	lagging L                         peer P (log starts at F)
//	  Fetch{Index: i < F}  ─────────▶
//	                       ◀───────── Snapshot{Index: F-1, Snapshot, Meta, Chosen}
//	  core: chosen = applied = F-1, forget instances <= F-1
//	  Ready.Install ─▶ persister: Storage.InstallSnapshot(F-1) (ONE write,
//	                   before any later save) ─▶ applier: restore the state
//	  Fetch{Index: F}      ─────────▶  (normal catch-up from here)
//
// Exactly-once holds: the snapshot carries the applier's dedup table, so
// a command inside it that is chosen again later is dropped; entries
// already queued for the applier below F-1 are applied before the install
// replaces their state. The install reaches storage before any Update
// that follows it, so a restart never sees a chosen index without either
// its entries or the snapshot covering them.

// InstalledSnapshot is a peer's snapshot the driver must install: make it
// durable (Storage.InstallSnapshot) before the Ready's Update, then hand
// it to the applier in order (after every earlier Committed, before this
// Ready's own).
type InstalledSnapshot struct {
	Index uint64 // the snapshot is the state right after Index
	Data  []byte // engine snapshot: dedup table + state machine
	Meta  []byte // the sender's membership history (adopted by the core)
}

// baseReader is the part of Storage the core reads to answer a Fetch
// below its first index.
type baseReader interface {
	HardState() wal.HardState
}

// answerCompacted answers a Fetch for an index this node compacted away
// with its base snapshot; it reports whether it did.
func (c *core) answerCompacted(m Message) bool {
	br, ok := c.reader.(baseReader)
	if !ok {
		return false
	}
	hs := br.HardState()
	if m.Index >= hs.FirstIndex || hs.Base == nil {
		return false
	}
	// The membership history rides along: the entries that built it may
	// be gone from the log the receiver will read.
	var meta []byte
	if c.hist != nil {
		meta = c.hist.encode()
	}
	c.send(Message{Type: MsgSnapshot, To: m.From, Index: hs.FirstIndex - 1, Chosen: c.chosen,
		Snapshot: hs.Base, Meta: meta})
	return true
}

// onSnapshot installs a peer's snapshot when it takes us past our chosen
// index; everything up to its index is chosen (the peer applied it).
func (c *core) onSnapshot(m Message) {
	c.fetching, c.fetchMiss = false, 0
	if m.Index <= c.chosen || len(m.Snapshot) == 0 {
		return
	}
	if c.role == leader && c.proposedUpTo(m.Index) {
		// The snapshot decides indexes we proposed and have not seen
		// chosen. We cannot compare its values with ours, and our chosen
		// notices are trusted as "accepted under our ballot is chosen"
		// (learnChosen): a follower holding our value there would mark
		// it chosen even if a higher ballot chose another. Step down, as
		// onLearn does on a different value.
		c.leaveLead(StepDownSuperseded, m.From, Ballot{})
	}
	for i := range c.log {
		if i <= m.Index {
			delete(c.log, i)
		}
	}
	c.chosen, c.applied, c.stable = m.Index, m.Index, m.Index
	c.last = max(c.last, m.Index)
	if c.role == leader && c.next <= m.Index {
		c.next = m.Index + 1
	}
	if len(m.Meta) > 0 {
		_ = c.adoptMeta(m.Meta) // a bad history is ignored, as from a seed
	}
	c.install = &InstalledSnapshot{Index: m.Index, Data: m.Snapshot, Meta: m.Meta}
	if m.Chosen > c.chosen {
		if m.Chosen > c.peerChosen {
			c.peerChosen, c.fetchFrom = m.Chosen, m.From
		}
		c.maybeFetch(m.From)
	}
	if c.role == leader {
		c.advanceChosen()
		c.maybePropose()
	}
}

// proposedUpTo reports whether we proposed, under the current ballot, an
// instance at or below idx that we have not seen chosen.
func (c *core) proposedUpTo(idx uint64) bool {
	for i, in := range c.log {
		if i <= idx && in.proposed && !in.chosen {
			return true
		}
	}
	return false
}
