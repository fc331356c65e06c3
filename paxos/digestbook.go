package paxos

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The digest book holds this node's finished range digests and those its
// peers sent, and compares them (digest.go says what a digest is):
//
//	applier ──addOwn──▶ ┌──────────── digestBook ────────────┐ ──recent()──▶ digestTransport: the newest
//	                    │ own: last 64 ranges (digest file)   │               4 ride on the next message
//	run loop ─addPeer─▶ │ peers: last 64 ranges per peer      │               to each peer (on change,
//	(m.Digests)         │ divergences: (peer, range) once     │               else once per interval)
//	                    └─────────────────────────────────────┘ ──▶ Status.Divergences, an ERROR log
//
// Who sees whom: the digests ride on whatever a node sends a peer
// anyway, and a peer that got nothing within the interval (one follower
// from another) gets a MsgDigests of its own, so every member compares
// with every member. Each digest comes from the node it describes, over
// that node's own authenticated link (the transport drops a message whose
// From is not the sender's certificate): one stolen key is one voice. A
// Divergence records what this node saw; its counts say which side a
// majority of the digests known here for that range holds, so the odd
// node is named once this node knows more than two of them.
//
// Why a mismatch only reports and never changes what a node does: a
// digest comes from a peer, and whoever holds a node's key can send any
// digest; were a mismatch to stop a node (or a master), one stolen key
// would be enough to stop the healthy majority. Reporting cannot be
// turned against the cluster that way, and an operator (or binlogd, from
// `binlogd cluster status`, which compares every node's own digests) can
// tell the odd node from the majority.

const (
	digestKeepOwn  = 64 // own finished ranges remembered (and kept in the digest file)
	digestKeepPeer = 64 // ranges remembered per peer
	digestsSent    = 4  // newest own ranges on a message
	// maxDigestsPerMessage: a message carrying more has its digests ignored.
	maxDigestsPerMessage = 16
	maxDivergences       = 64 // remembered for Status; the counter counts them all
)

// Divergence is a range whose digest a peer reported differently from
// this node's own: the two logs hold different chosen values somewhere in
// [First, Last] (paxos guarantees they cannot, unless a node lies, has a
// bug or a corrupt disk).
type Divergence struct {
	Node, Peer   uint32 // Node: this node (the one that saw it)
	First, Last  uint64
	Ours, Theirs [32]byte
	// Among the digests of this range this node knows (its own and its
	// peers', Known in all): how many equal Ours and Theirs. Members is
	// how many nodes the cluster has (every member computes digests).
	OursCount, TheirsCount, Known, Members int
	At                                     time.Time // when it was first seen
}

// Odd returns the node whose digest a majority of the members does not
// hold: Peer when more than half of them hold Ours, Node when more than
// half hold Theirs, 0 when this node does not know enough digests to
// tell. A majority of the members, not of the digests known: otherwise a
// forked node and a liar that sends the forked node's digest (one stolen
// key can do both) would outvote a healthy node that has not heard the
// others yet.
func (d Divergence) Odd() uint32 {
	n := max(d.Known, d.Members)
	switch {
	case 2*d.OursCount > n:
		return d.Peer
	case 2*d.TheirsCount > n:
		return d.Node
	}
	return 0
}

type divKey struct {
	peer  uint32
	first uint64
}

// digestBook is shared by the applier (own digests), the run loop (peer
// digests) and the transport (what to send): guarded by mu.
type digestBook struct {
	mu         sync.Mutex
	self       uint32
	own        []RangeDigest // ascending First, at most digestKeepOwn
	version    uint64        // bumps when own gains a range
	ver        atomic.Uint64 // version, readable without mu
	peers      map[uint32][]RangeDigest
	seen       map[divKey]bool
	divs       []Divergence // first maxDivergences seen
	mismatches uint64       // every divergence seen
	members    int          // nodes in the cluster (setMembers)
	now        func() time.Time
}

// setMembers records how many nodes the cluster has, this one included.
func (b *digestBook) setMembers(n int) {
	b.mu.Lock()
	b.members = n
	b.mu.Unlock()
}

func newDigestBook(self uint32) *digestBook {
	return &digestBook{self: self, peers: make(map[uint32][]RangeDigest), seen: make(map[divKey]bool), now: time.Now}
}

// insertDigest puts d into the ascending list ds (replacing a digest of
// the same First) and keeps at most keep of the newest.
func insertDigest(ds []RangeDigest, d RangeDigest, keep int) []RangeDigest {
	i, found := slices.BinarySearchFunc(ds, d.First, func(e RangeDigest, f uint64) int {
		switch {
		case e.First < f:
			return -1
		case e.First > f:
			return 1
		}
		return 0
	})
	if found {
		ds[i] = d
	} else {
		ds = slices.Insert(ds, i, d)
	}
	if len(ds) > keep {
		ds = slices.Delete(ds, 0, len(ds)-keep)
	}
	return ds
}

func findDigest(ds []RangeDigest, first, last uint64) (RangeDigest, bool) {
	for i := len(ds) - 1; i >= 0; i-- {
		if ds[i].First == first && ds[i].Last == last {
			return ds[i], true
		}
		if ds[i].First < first {
			break
		}
	}
	return RangeDigest{}, false
}

// loadOwn seeds the book with digests this node computed before a
// restart (ascending).
func (b *digestBook) loadOwn(ds []RangeDigest) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, d := range ds {
		b.own = insertDigest(b.own, d, digestKeepOwn)
	}
	b.version++
	b.ver.Store(b.version)
}

// addOwn records a range this node finished and returns the divergences
// it reveals against what peers sent.
func (b *digestBook) addOwn(d RangeDigest) []Divergence {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.own = insertDigest(b.own, d, digestKeepOwn)
	b.version++
	b.ver.Store(b.version)
	var out []Divergence
	for peer, ds := range b.peers {
		if p, ok := findDigest(ds, d.First, d.Last); ok && p.Sum != d.Sum {
			out = b.note(peer, d, p, out)
		}
	}
	return out
}

// addPeer records the digests peer sent and returns the divergences they
// reveal. A digest of a range other than this node's (another range
// size) or one it does not have is kept for later or ignored: unknown,
// not a mismatch.
func (b *digestBook) addPeer(peer uint32, ds []RangeDigest) []Divergence {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Divergence
	for _, d := range ds {
		if d.First == 0 || d.Last < d.First || d.Last-d.First >= maxDigestRange {
			continue
		}
		b.peers[peer] = insertDigest(b.peers[peer], d, digestKeepPeer)
		if o, ok := findDigest(b.own, d.First, d.Last); ok && o.Sum != d.Sum {
			out = b.note(peer, o, d, out)
		}
	}
	return out
}

func (b *digestBook) note(peer uint32, ours, theirs RangeDigest, out []Divergence) []Divergence {
	k := divKey{peer, ours.First}
	if b.seen[k] {
		return out
	}
	b.seen[k] = true
	b.mismatches++
	d := Divergence{Node: b.self, Peer: peer, First: ours.First, Last: ours.Last, Ours: ours.Sum, Theirs: theirs.Sum, At: b.now()}
	b.count(&d)
	if len(b.divs) < maxDivergences {
		b.divs = append(b.divs, d)
	}
	return append(out, d)
}

// count fills in d's counts from the digests known now.
func (b *digestBook) count(d *Divergence) {
	d.OursCount, d.TheirsCount, d.Known, d.Members = 1, 0, 1, b.members
	for _, ds := range b.peers {
		p, ok := findDigest(ds, d.First, d.Last)
		if !ok {
			continue
		}
		d.Known++
		switch p.Sum {
		case d.Ours:
			d.OursCount++
		case d.Theirs:
			d.TheirsCount++
		}
	}
}

// recent returns the newest own digests to send, and the version they
// are of.
func (b *digestBook) recent() ([]RangeDigest, uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := min(len(b.own), digestsSent)
	return slices.Clone(b.own[len(b.own)-n:]), b.version
}

// ownAll returns every own digest remembered (for the digest file).
func (b *digestBook) ownAll() ([]RangeDigest, uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.own), b.version
}

// status returns the newest own digests, the divergences seen (counts as
// of now) and how many were seen in all.
func (b *digestBook) status() ([]RangeDigest, []Divergence, uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := min(len(b.own), digestsSent)
	divs := slices.Clone(b.divs)
	for i := range divs {
		b.count(&divs[i])
	}
	return slices.Clone(b.own[len(b.own)-n:]), divs, b.mismatches
}

// digestTransport attaches this node's newest digests to one message per
// peer whenever they changed since that peer last got them, and at least
// once per interval (a message may be lost): the peers compare them with
// their own. Every message type goes to the same place, so the digests
// travel on heartbeats, their answers and whatever else flows.
type digestTransport struct {
	transport
	book  *digestBook
	every time.Duration
	self  uint32

	mu    sync.Mutex
	sent  map[uint32]digestMark
	peers []uint32 // every node the transport dials (setPeers), but this one
}

type digestMark struct {
	at      time.Time
	version uint64
}

func newDigestTransport(t transport, book *digestBook, every time.Duration, self uint32, peers map[uint32]string) *digestTransport {
	d := &digestTransport{transport: t, book: book, every: every, self: self, sent: make(map[uint32]digestMark)}
	d.followPeers(peers)
	return d
}

func (t *digestTransport) followPeers(addrs map[uint32]string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.peers = t.peers[:0]
	for id := range addrs {
		if id != t.self {
			t.peers = append(t.peers, id)
		}
	}
	slices.Sort(t.peers)
	t.book.setMembers(len(t.peers) + 1)
}

func (t *digestTransport) setPeers(addrs map[uint32]string) {
	t.followPeers(addrs)
	t.transport.setPeers(addrs)
}

// tick (run loop, every tick) sends a MsgDigests to each peer that is
// due and got no other message meanwhile: followers send each other
// nothing else, and so every member compares with every member, which
// lets each one count a majority (Divergence.Odd) from digests every
// peer sent for itself, over its own authenticated link.
func (t *digestTransport) tick() {
	version := t.book.ver.Load()
	now := time.Now()
	var ms []Message
	var ds []RangeDigest
	t.mu.Lock()
	for _, id := range t.peers {
		if mark, ok := t.sent[id]; ok && mark.version == version && now.Sub(mark.at) < t.every {
			continue
		}
		if ds == nil {
			if ds, version = t.book.recent(); len(ds) == 0 {
				break
			}
		}
		ms = append(ms, Message{Type: MsgDigests, From: t.self, To: id, Digests: ds})
		t.sent[id] = digestMark{at: now, version: version}
	}
	t.mu.Unlock()
	if len(ms) > 0 {
		t.transport.send(ms)
	}
}

func (t *digestTransport) send(ms []Message) {
	var ds []RangeDigest
	version := t.book.ver.Load()
	loaded := false
	now := time.Now()
	t.mu.Lock()
	for i := range ms {
		mark, ok := t.sent[ms[i].To]
		if ok && mark.version == version && now.Sub(mark.at) < t.every {
			continue // the common case: no lock, no copy
		}
		if !loaded {
			ds, version = t.book.recent()
			loaded = true
		}
		if len(ds) == 0 {
			break
		}
		ms[i].Digests = ds
		t.sent[ms[i].To] = digestMark{at: now, version: version}
	}
	t.mu.Unlock()
	t.transport.send(ms)
}
