package paxos

import (
	"encoding/hex"
	"log/slog"
)

// nodeDigests is the Node's part of the log digests (digest.go,
// digestbook.go): the running digest (applier goroutine), the book and
// the digest file.
type nodeDigests struct {
	d    *digester
	book *digestBook
	file *digestFile // nil: no Dir, or it could not be opened (kept in memory only)
	odd  *oddMarks   // digest_odd.go
	log  *slog.Logger
}

// startDigests sets up the digests of a node whose applier has restored
// applied: it loads the digest file, re-hashes from storage the ranges
// finished since its last record (at most digestsSent) and the applied
// part of the current range, so a node restarting mid-range computes
// the same digest as if it had not stopped. Errors only cost digests:
// they are logged, never fatal.
func startDigests(cfg Config, st Storage, applied uint64, log *slog.Logger) *nodeDigests {
	nd := &nodeDigests{d: newDigester(cfg.DigestRange), book: newDigestBook(cfg.ID), log: log}
	nd.d.reset(applied)
	var err error
	if nd.odd, err = loadOddMarks(cfg.Dir); err != nil {
		log.Warn("paxos: read the log's odd marks", "err", err)
	}
	for _, m := range nd.odd.list() {
		log.Error("paxos: this node's log is the ODD ONE: at its last check the majority of the nodes' digests of this range disagreed with its own, "+
			"so its log holds a value there that was not chosen; remove it from the membership and add it back with an empty directory",
			"first", m.First, "last", m.Last, "ours", hex.EncodeToString(m.Ours[:]), "majority", hex.EncodeToString(m.Majority[:]), "since", m.At)
	}
	var last uint64 // highest Last on file
	if cfg.Dir != "" {
		f, ds, err := openDigestFile(cfg.Dir)
		if err != nil {
			log.Warn("paxos: log digests will not survive a restart", "err", err)
		} else {
			nd.file = f
			nd.book.loadOwn(ds)
			for _, d := range ds {
				last = max(last, d.Last)
			}
		}
	}
	// Ranges finished at or below applied that the file lacks: ranges
	// [k*r+1, (k+1)*r] for k < kEnd are finished.
	r := nd.d.r
	kEnd := applied / r
	for k := max(last/r, kEnd-min(kEnd, digestsSent)); k < kEnd; k++ {
		d, ok, err := digestStored(st, k*r+1, (k+1)*r)
		if err != nil {
			log.Warn("paxos: log digest of a finished range", "first", k*r+1, "err", err)
			break
		}
		if ok {
			nd.own(d)
		}
	}
	if err := nd.d.resume(st); err != nil {
		log.Warn("paxos: log digest of the current range", "first", nd.d.first, "err", err)
	}
	return nd
}

// applied hashes one applied entry (applier goroutine).
func (nd *nodeDigests) applied(e Entry) {
	if d, ok := nd.d.add(e.Index, e.Value); ok {
		nd.own(d)
	}
}

func (nd *nodeDigests) own(d RangeDigest) {
	divs := nd.book.addOwn(d)
	if nd.file != nil {
		if err := nd.file.append(d, func() []RangeDigest { own, _ := nd.book.ownAll(); return own }); err != nil {
			nd.log.Warn("paxos: persist a log digest", "first", d.First, "err", err)
			nd.file.close()
			nd.file = nil
		}
	}
	nd.report(divs)
	nd.checkOdd()
}

// fromPeer takes the digests a peer's message carried (run loop).
func (nd *nodeDigests) fromPeer(peer uint32, ds []RangeDigest) {
	if len(ds) > maxDigestsPerMessage {
		return
	}
	nd.report(nd.book.addPeer(peer, ds))
	nd.checkOdd()
}

// checkOdd records the ranges where the majority now names this node as
// the odd one (digest_odd.go).
func (nd *nodeDigests) checkOdd() {
	for _, d := range nd.book.oddNow() {
		isNew, err := nd.odd.add(OddRange{First: d.First, Last: d.Last, Ours: d.Ours, Majority: d.Theirs, At: d.At})
		if err != nil {
			nd.log.Warn("paxos: persist an odd mark", "first", d.First, "err", err)
		}
		if isNew {
			nd.log.Error("paxos: this node's log is the ODD ONE: the majority of the nodes' digests of this range disagrees with its own, "+
				"so its log holds a value there that was not chosen; it says so until its directory is replaced: "+
				"remove it from the membership and add it back with an empty directory",
				"first", d.First, "last", d.Last, "ours", hex.EncodeToString(d.Ours[:]), "majority", hex.EncodeToString(d.Theirs[:]),
				"digests_known", d.Known, "holding_majority", d.TheirsCount)
		}
	}
}

// report logs each divergence once (the book returns each once).
func (nd *nodeDigests) report(divs []Divergence) {
	for _, d := range divs {
		nd.log.Error("paxos: LOG DIVERGENCE: a peer's digest of a range of the chosen log differs from this node's; "+
			"one of the two logs holds a value that was not chosen (a forged message from a holder of a node's key, a bug, or a corrupt disk). "+
			"Compare with the other nodes (binlogd cluster status); replace the odd one: remove it from the membership and add it back with an empty directory (its log would go on serving the value to peers that fetch from it)",
			"peer", d.Peer, "first", d.First, "last", d.Last,
			"ours", hex.EncodeToString(d.Ours[:]), "theirs", hex.EncodeToString(d.Theirs[:]),
			"digests_known", d.Known, "holding_ours", d.OursCount, "holding_theirs", d.TheirsCount, "odd_node", d.Odd())
	}
}

func (nd *nodeDigests) close() { nd.file.close() }

// noteOdd tells the core once the node holds an odd mark (core_odd.go),
// from the run loop: marks come from peers' digests there and from the
// applier's own, which the next tick picks up.
func (n *Node) noteOdd() {
	if n.digests.odd.any() {
		n.rn.SetOdd()
	}
}
