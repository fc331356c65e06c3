package capture

import (
	"context"
	"fmt"
	"hash/crc32"
	"time"

	"phxgo/binlogd/binlog"
)

// batch is a run of whole transactions handed to one Sink.Propose, or
// one piece of a transaction too big to hold whole, which travels alone.
type batch struct {
	info    BatchInfo
	txns    []binlog.Txn
	bytes   int
	end     Position // where its last transaction (or piece) ends
	needAck bool     // some transaction in it carries an ACK request
	piece   bool     // txns is one piece of a split transaction
	// groupHead: the batch's only transaction so far opens a MariaDB
	// group commit of two or more, whose next transaction is still to
	// come (pipeline.holding). holdFrom: when it began to wait for it
	// (zero: it never did); heldFor: how long it waited; holdTimedOut:
	// GroupHold ended the wait. lastCommit: the group commit of its last
	// transaction.
	groupHead, holdTimedOut bool
	holdFrom                time.Time
	heldFor                 time.Duration
	lastCommit              uint64
	pend                    Pending // set once proposed

	// Stage times, for Stats: the first transaction arrived, the first
	// ACK request arrived, the batch was proposed, Wait returned.
	firstAt, askedAt, proposedAt, durableAt time.Time
	// Where the batch's first transaction found capture: behind an
	// earlier batch still in flight (overlapped), or idle for starved
	// since the last batch in flight became durable (zero: neither, as
	// for a session's first batch).
	overlapped bool
	starved    time.Duration
}

// maxTurnaround bounds a starved batch's wait (Stats.StarvedTime): a
// longer one is the master being idle, not its turnaround between commit
// groups, and counts as neither starved nor overlapped.
const maxTurnaround = 100 * time.Millisecond

type result struct {
	b   *batch
	err error
}

// pipeline is one session's batching loop. Batches reach the sink in
// stream order from this one goroutine (propose), and their outcomes
// come back in the same order from one waiter goroutine (wait), so the
// front of inflight is always the next batch to become durable.
type pipeline struct {
	c   *Capture
	s   *stream
	ctx context.Context
	buf *budget // bytes taken by the reader, given back when durable; nil in tests

	toWait   chan *batch // proposed batches, in order, for the waiter
	results  chan result // their outcomes, in the same order
	pending  *batch      // accumulating, not yet proposed
	held     *unit       // did not fit in pending; reading pauses until it does
	inflight []*batch    // proposed, in order; retired from the front
	got      bool
	failed   bool // a batch was not durable: no later one may become durable
	// idleSince: when the last batch in flight became durable with
	// nothing pending (zero while work is queued or before the first).
	idleSince time.Time

	// lastCommit: the group commit (unit.commitID) of the last
	// transaction accepted. hold ends a group head's wait
	// (Config.GroupHold); holdC is its channel while armed, else nil.
	lastCommit uint64
	hold       *time.Timer
	holdC      <-chan time.Time
}

func newPipeline(ctx context.Context, c *Capture, s *stream) *pipeline {
	p := &pipeline{c: c, s: s, ctx: ctx, lastCommit: c.durableCommit,
		toWait:  make(chan *batch, c.cfg.MaxInFlight),
		results: make(chan result, c.cfg.MaxInFlight)}
	go p.wait()
	return p
}

// wait is the waiter goroutine: it awaits each proposed batch's outcome in
// proposal order until toWait is closed. In steady state the log chooses
// batches in the order they were queued, so waiting in order costs no
// time, and one goroutine serves every batch of the session.
func (p *pipeline) wait() {
	for b := range p.toWait {
		err := b.pend.Wait(p.ctx)
		b.durableAt = time.Now()
		p.results <- result{b, err}
	}
}

func (p *pipeline) run(units <-chan *unit, readErr <-chan error) error {
	for {
		in := units
		if p.held != nil {
			in = nil
		}
		select {
		case <-p.ctx.Done():
			return p.ctx.Err()
		case err := <-readErr:
			return fmt.Errorf("capture: stream: %w", unwrapMy(err))
		case u := <-in:
			if err := p.accept(u); err != nil {
				return err
			}
			// Take whatever else is already waiting: the batch is sized by
			// what arrived while the previous ones were being proposed.
			for p.held == nil {
				select {
				case u := <-units:
					if err := p.accept(u); err != nil {
						return err
					}
					continue
				default:
				}
				break
			}
		case r := <-p.results:
			if err := p.retire(r); err != nil {
				return err
			}
		case <-p.holdC:
			p.holdC = nil
			if b := p.pending; b != nil && b.groupHead {
				b.groupHead, b.holdTimedOut = false, true // waited long enough
			}
		}
		if err := p.propose(); err != nil {
			return err
		}
	}
}

// accept dedupes one transaction and adds it to the pending batch.
func (p *pipeline) accept(u *unit) error {
	c := p.c
	p.got = true
	g := u.txn.GTID
	if !c.durable.IsZero() && g.Domain != c.durable.Domain {
		return fmt.Errorf("%w: transaction %v is in a second GTID domain (durable: %v)", ErrBadSettings, g, c.durable)
	}
	if !c.durable.IsZero() && g.Seq <= c.durable.Seq {
		// Re-delivered after a reconnect: already durable. The master
		// may still wait for it, so ACK it unless newer work is queued.
		p.buf.give(len(u.txn.Events))
		if u.txn.More {
			return nil // a piece: its transaction's end is ACKed, if asked
		}
		c.stats.update(func(st *Stats) { st.Duplicates++ })
		if !u.needAck {
			return nil
		}
		if p.pending != nil || len(p.inflight) > 0 {
			return fmt.Errorf("%w: GTID %v went backwards behind queued work", ErrProtocol, g)
		}
		return p.ack(u.end, time.Now(), 0)
	}
	if err := p.follows(u.txn); err != nil {
		return err
	}
	// A piece travels alone: it neither joins a batch nor takes others.
	if p.pending != nil && (p.pending.piece || !u.txn.Whole() || p.pending.bytes+len(u.txn.Events) > c.cfg.BatchMaxBytes) {
		p.held = u
		// The next transaction is here, if only for the next batch: a
		// group's head waits no longer (holding).
		p.pending.groupHead = false
		return nil
	}
	p.add(u)
	return nil
}

// follows checks that t comes right after what was accepted before it:
// a new transaction after the last one ended, or the next piece, at the
// next offset, of the transaction still open.
func (p *pipeline) follows(t binlog.Txn) error {
	c, g := p.c, t.GTID
	last, open := c.dispatched, c.open
	if p.pending != nil {
		lt := p.pending.txns[len(p.pending.txns)-1]
		last = lt.GTID
		open = openAfter(lt)
	}
	switch {
	case open.gtid.IsZero() && t.Offset != 0:
		return fmt.Errorf("%w: piece of %v at offset %d, but no split transaction is open", ErrProtocol, g, t.Offset)
	case !open.gtid.IsZero() && (g != open.gtid || t.Offset != open.next):
		return fmt.Errorf("%w: %v at offset %d while %v is open at offset %d", ErrProtocol, g, t.Offset, open.gtid, open.next)
	case open.gtid.IsZero() && !last.IsZero() && g.Seq <= last.Seq:
		return fmt.Errorf("%w: GTID %v is not after the previous transaction", ErrProtocol, g)
	}
	return nil
}

// openTxn is a split transaction with pieces accepted and its end to
// come: the next piece must start at next.
type openTxn struct {
	gtid binlog.GTID
	next uint64
}

// openAfter is the open transaction once t was accepted.
func openAfter(t binlog.Txn) openTxn {
	if !t.More {
		return openTxn{}
	}
	return openTxn{gtid: t.GTID, next: t.Offset + uint64(len(t.Events))}
}

func (p *pipeline) add(u *unit) {
	now := time.Now()
	if p.pending == nil {
		p.pending = &batch{firstAt: now, overlapped: len(p.inflight) > 0}
		if !p.idleSince.IsZero() && len(p.inflight) == 0 {
			if d := now.Sub(p.idleSince); d <= maxTurnaround {
				p.pending.starved = d
			}
		}
		p.idleSince = time.Time{}
	}
	b := p.pending
	b.groupHead = len(b.txns) == 0 && u.txn.Whole() && u.commitID != 0 && u.commitID != p.lastCommit
	p.lastCommit, b.lastCommit = u.commitID, u.commitID
	b.txns = append(b.txns, u.txn)
	b.bytes += len(u.txn.Events)
	b.end = u.end
	b.piece = !u.txn.Whole()
	if u.needAck && !b.needAck {
		b.needAck, b.askedAt = true, now
	}
}

// propose hands the pending batch to the sink, here on the pipeline's
// goroutine and so in stream order, unless MaxInFlight batches already
// wait for their outcome (then pending keeps growing, up to
// BatchMaxBytes, and reading pauses behind it).
func (p *pipeline) propose() error {
	c := p.c
	for p.pending != nil && len(p.inflight) < c.cfg.MaxInFlight {
		if p.holding() {
			return nil
		}
		b := p.pending
		p.pending = nil
		c.batchSeq++
		b.info = BatchInfo{Seq: c.batchSeq, Prev: c.dispatched}
		pend, err := c.sink.Propose(p.ctx, b.info, b.txns)
		if err != nil {
			return fmt.Errorf("%w: batch %d (%v..%v, %d txns) not queued: %w", ErrRejected, b.info.Seq,
				b.txns[0].GTID, b.txns[len(b.txns)-1].GTID, len(b.txns), err)
		}
		b.pend, b.proposedAt = pend, time.Now()
		if !b.holdFrom.IsZero() {
			b.heldFor = b.proposedAt.Sub(b.holdFrom)
		}
		lt := b.txns[len(b.txns)-1]
		if lt.Ends() {
			c.dispatched = lt.GTID
		}
		c.open = openAfter(lt)
		p.inflight = append(p.inflight, b)
		p.toWait <- b // never blocks: it holds MaxInFlight
		n := len(p.inflight)
		c.stats.update(func(st *Stats) { st.MaxInFlight = max(st.MaxInFlight, n) })
		if p.held != nil {
			u := p.held
			p.held = nil
			p.add(u)
		}
	}
	return nil
}

// holding reports whether the pending batch waits for the rest of its
// group commit, and arms the hold's timer if so.
//
// MariaDB syncs a whole group commit before the dump thread sends any
// of it, yet the group's first transaction often reached capture alone,
// 0.2-0.7 ms before the rest: binlogd, at a higher priority, took the
// CPU from the dump thread to propose it. Proposed at once, it became a
// Paxos value of its own (16 sysbench threads: groups of 8.3 made 1.5
// values each), and the group's commits gained nothing by it: MariaDB
// releases a transaction only when its ACK comes, and the group's last
// one came with the rest. A group commit of two or more marks each of
// its transactions with its commit id (FL_GROUP_COMMIT_ID), so a batch
// holding only the first of them knows more is on the way and waits
// for it, until GroupHold after it arrived (a bound for the
// unexpected: the next one is already synced to the binlog; time spent
// waiting for a free MaxInFlight slot counts). Nothing else waits: a
// lone transaction without a commit id committed alone, and once a
// second transaction has arrived the batch goes as it is.
func (p *pipeline) holding() bool {
	b := p.pending
	if !b.groupHead || p.c.cfg.GroupHold <= 0 {
		p.stopHold()
		return false
	}
	now := time.Now()
	left := p.c.cfg.GroupHold - now.Sub(b.firstAt)
	if left <= 0 {
		b.groupHead = false
		b.holdTimedOut = !b.holdFrom.IsZero()
		p.stopHold()
		return false
	}
	if b.holdFrom.IsZero() {
		b.holdFrom = now
	}
	if p.holdC == nil {
		if p.hold == nil {
			p.hold = time.NewTimer(left)
		} else {
			p.hold.Reset(left)
		}
		p.holdC = p.hold.C
	}
	return true
}

func (p *pipeline) stopHold() {
	if p.holdC != nil {
		p.hold.Stop()
		p.holdC = nil
	}
}

// retire makes r's batch, the oldest in flight, durable, together with
// any later outcomes already waiting, and sends one ACK for the newest
// position they cover, if any of them was asked for.
func (p *pipeline) retire(r result) error {
	var (
		pos    Position
		asked  time.Time
		txns   int
		needed bool
	)
	for {
		if err := p.durable(r); err != nil {
			return err
		}
		b := r.b
		if b.txns[len(b.txns)-1].Ends() {
			// A piece's end is inside its transaction: never ACKed.
			pos = b.end
			txns += len(b.txns)
		}
		if b.needAck {
			if !needed || b.askedAt.Before(asked) {
				asked = b.askedAt
			}
			needed = true
		}
		select {
		case r = <-p.results:
			continue
		default:
		}
		break
	}
	if len(p.inflight) == 0 && p.pending == nil && p.held == nil {
		p.idleSince = time.Now()
	}
	if !needed {
		return nil
	}
	return p.ack(pos, asked, txns)
}

// durable records r's batch, which must be the oldest in flight, as
// durable, or returns ErrRejected.
func (p *pipeline) durable(r result) error {
	c, b := p.c, r.b
	if len(p.inflight) == 0 || p.inflight[0] != b {
		// Invariant: outcomes come back in proposal order (one waiter).
		return fmt.Errorf("%w: outcome of batch %d out of order", ErrProtocol, b.info.Seq)
	}
	// Clear the slot: the array's front, behind the slice, would keep
	// up to MaxInFlight durable batches (and their events: 16 MiB of a
	// big transaction's pieces) reachable until append moves it.
	p.inflight[0] = nil
	p.inflight = p.inflight[1:]
	if p.failed {
		return fmt.Errorf("%w: batch %d follows a batch that is not durable", ErrRejected, b.info.Seq)
	}
	if r.err != nil {
		p.failed = true
		return fmt.Errorf("%w: batch %d (%v..%v, %d txns): %w", ErrRejected, b.info.Seq,
			b.txns[0].GTID, b.txns[len(b.txns)-1].GTID, len(b.txns), r.err)
	}
	p.buf.give(b.bytes)
	c.durableCommit = b.lastCommit
	done := len(b.txns)
	if lt := b.txns[len(b.txns)-1]; lt.Ends() {
		c.durable, c.durablePos = lt.GTID, b.end
		c.partial = resumePoint{}
	} else {
		done--
		if lt.Offset == 0 {
			c.partial = resumePoint{gtid: lt.GTID}
		}
		c.partial.bytes += uint64(len(lt.Events))
		c.partial.crc = crc32.Update(c.partial.crc, crc32.IEEETable, lt.Events)
	}
	c.stats.update(func(st *Stats) {
		st.Txns += uint64(done)
		st.Bytes += uint64(b.bytes)
		st.Batches++
		if b.piece {
			st.Pieces++
		}
		st.MaxBatchTxns = max(st.MaxBatchTxns, len(b.txns))
		st.Durable = c.durable
		st.ReadToPropose += b.proposedAt.Sub(b.firstAt)
		st.ProposeToDurable += b.durableAt.Sub(b.proposedAt)
		if b.overlapped {
			st.Overlapped++
		}
		if b.starved > 0 {
			st.Starved++
			st.StarvedTime += b.starved
		}
		if !b.holdFrom.IsZero() {
			st.Held++
			st.HeldTime += b.heldFor
			if b.holdTimedOut {
				st.HoldTimeouts++
			}
		}
	})
	return nil
}

func (p *pipeline) ack(pos Position, asked time.Time, txns int) error {
	if err := p.s.sendAck(pos); err != nil {
		return fmt.Errorf("capture: send ACK %v: %w", pos, err)
	}
	lat := time.Since(asked)
	p.c.stats.update(func(st *Stats) {
		st.Acks++
		st.AckedTxns += uint64(txns)
		st.AckLatency += lat
		st.AckLatencyMx = max(st.AckLatencyMx, lat)
		st.Acked = pos
	})
	return nil
}

// drain waits for every batch in flight, retires the durable prefix (its
// ACK may fail on the dead connection; the next session's first ACK
// covers it) and stops the waiter. The next session resumes right after
// the last durable GTID.
func (p *pipeline) drain() error {
	var firstErr error
	for len(p.inflight) > 0 {
		// After a failure durable refuses every later batch: they chain
		// on the failed one, so none is durable in order.
		if err := p.durable(<-p.results); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	close(p.toWait)
	p.stopHold()
	p.c.dispatched = p.c.durable
	p.c.open = openTxn{}
	if r := p.c.partial; !r.gtid.IsZero() {
		p.c.open = openTxn{gtid: r.gtid, next: r.bytes}
	}
	return firstErr
}
