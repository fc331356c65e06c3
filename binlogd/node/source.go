package node

import (
	"context"
	"errors"
	"fmt"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/replserver"
	"phxgo/masterlease"
	"phxgo/paxos"
)

// logSource serves the valid binlog of the Paxos log to the replication
// endpoint. Validity is recomputed by replaying masterlease.Step over the
// log from its first index, starting from the lease state stored with the
// compaction point (paxos Base; the state after FirstIndex-1), so a
// replica at or after that state's last valid GTID is served and one
// before it gets ErrPurged (error 1236: reseed it): Step is the same pure function every node's
// Apply runs, so the reader ships exactly the batches Apply judged valid.
// (Read may return a command twice after a leader change, where Apply saw
// it once; every entry kind is idempotent under Step — a repeated grant
// fails its version CAS, a repeated Fence or batch its epoch or chain — so
// the replay agrees with Apply.)
type logSource struct {
	px       logReader
	readSize int
	// base: where the chain of a cluster rebuilt from a backup starts
	// (config base_gtid, masterlease SetBase); like a compaction point at
	// index 0, it is the log's first GTID.
	base binlog.GTID
}

// logReader is what the source reads of the Paxos log (a *paxos.Node).
type logReader interface {
	ReadNext(from uint64, maxBytes int) (cmds []paxos.Command, next uint64, err error)
	Base() (index uint64, snap []byte, err error)
	Applied() uint64
	AppliedCh() <-chan struct{}
}

func newLogSource(px logReader) *logSource {
	return &logSource{px: px, readSize: 4 << 20}
}

func (n *Node) newLogSource() *logSource {
	s := newLogSource(n.px)
	s.base = binlog.GTID(n.lease.Base())
	return s
}

// logCursor walks the log, replaying the state machine as it goes.
//
// A transaction split into fragments is never held whole (see
// source_split.go): at its first fragment the cursor reads ahead, keeping
// only the state, until the transaction is complete or voided by a term
// change; a complete one is then read again from its first fragment and
// handed on in pieces of whole events as they come, a voided one is
// never shipped. A replica thus never receives part of a transaction
// that the log does not hold whole.
type logCursor struct {
	src   *logSource
	next  uint64 // next log index to read
	skip  int    // commands at index next already stepped (a rewind into a shared index)
	st    masterlease.State
	queue []binlog.Txn
	after binlog.GTID
	found bool // after was seen (or is zero): ship from here on
	// skipPartial: the base state holds a split transaction whose first
	// fragments were compacted away; its remaining fragments are dropped.
	skipPartial bool
	// partialDone: that transaction's last fragment was valid, so the log
	// holds it whole although its start was compacted away. A replica
	// cannot be sent it (it is reseeded), but validGTIDs must count it:
	// recovery would otherwise cut a transaction InnoDB has committed.
	partialDone binlog.GTID
	split       splitState // the split transaction being read ahead or shipped
}

// errCompacted is what a cursor reports when the log was compacted past it.
func errCompacted(err error) error {
	return fmt.Errorf("%w: the log was compacted past this position; reseed this replica: %w", replserver.ErrPurged, err)
}

func (s *logSource) Open(ctx context.Context, pos binlog.GTIDList) (replserver.Cursor, error) {
	if len(pos) > 1 {
		return nil, fmt.Errorf("%w: %s has several domains; phxgo uses one", replserver.ErrUnknownPosition, pos)
	}
	// A compaction between reading the base and the first read moves the
	// base: try again from the new one.
	for attempt := 0; ; attempt++ {
		c, err := s.open(ctx, pos)
		if err != nil && errors.Is(err, paxos.ErrCompacted) && attempt < 2 {
			continue
		}
		return c, err
	}
}

// baseCursor returns a cursor at the log's first stored index, with the
// lease state as of the compaction point, and that point's index and last
// valid GTID (zero when the log is whole).
func (s *logSource) baseCursor() (c *logCursor, base uint64, first binlog.GTID, err error) {
	base, snap, err := s.px.Base()
	if err != nil {
		return nil, 0, first, errCompacted(err)
	}
	c = &logCursor{src: s, next: base + 1}
	if base == 0 && !s.base.IsZero() {
		c.st.LastGTID = masterlease.GTID(s.base)
		first = s.base
	}
	if base > 0 {
		if c.st, err = masterlease.DecodeState(snap); err != nil {
			return nil, 0, first, fmt.Errorf("log base at index %d: %w", base, err)
		}
		first = binlog.GTID(c.st.LastGTID)
		c.skipPartial = !c.st.Partial.IsZero()
	}
	return c, base, first, nil
}

func (s *logSource) open(ctx context.Context, pos binlog.GTIDList) (replserver.Cursor, error) {
	c, base, first, err := s.baseCursor()
	if err != nil {
		return nil, err
	}
	want := binlog.GTID{}
	if len(pos) == 1 {
		want = pos[0]
	}
	switch {
	case !first.IsZero() && want.IsZero():
		return nil, fmt.Errorf("%w: the log was compacted up to GTID %s (index %d); a replica with no GTID position must be reseeded", replserver.ErrPurged, first, base)
	case !first.IsZero() && want.Domain == first.Domain && (want.Seq < first.Seq || (want == first && c.skipPartial)):
		return nil, fmt.Errorf("%w: GTID %s is before the log's first retained GTID %s (index %d); reseed this replica", replserver.ErrPurged, want, first, base)
	case want.IsZero() || want == first:
		c.found = true
	default:
		c.after = want
	}
	// Find the position now, so a forked or unknown one fails at once with
	// error 1236 rather than a replica waiting forever.
	if !c.found {
		if err := c.seek(ctx); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// seek reads until c.after is found. It fails when the log's valid chain
// has passed c.after's sequence number without containing it (a fork),
// and waits when the replica is ahead of this node's log (it may catch up).
func (c *logCursor) seek(ctx context.Context) error {
	for !c.found {
		moved, err := c.fill()
		if err != nil {
			return err
		}
		if c.found {
			return nil
		}
		last := c.st.LastGTID
		if last.Domain == c.after.Domain && last.Seq >= c.after.Seq && !c.found {
			return fmt.Errorf("%w: GTID %s is not in the log (its chain is at %s)", replserver.ErrUnknownPosition, c.after, binlog.GTID(last))
		}
		// Another domain's position is never reached: the log writes
		// one domain (0). A replica asking for one waited forever (third
		// red-team pass, session 37).
		if (last.IsZero() && c.after.Domain != 0) || (!last.IsZero() && last.Domain != c.after.Domain) {
			return fmt.Errorf("%w: domain %d; the log uses domain %d", replserver.ErrUnknownPosition, c.after.Domain, last.Domain)
		}
		if !moved {
			if err := c.wait(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *logCursor) wait(ctx context.Context) error {
	ch := c.src.px.AppliedCh()
	if c.src.px.Applied() >= c.next {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// fill reads one chunk of the log into c.queue; it reports whether the
// cursor moved (false: nothing new is applied yet, wait).
func (c *logCursor) fill() (moved bool, err error) {
	cmds, next, err := c.src.px.ReadNext(c.next, c.src.readSize)
	if errors.Is(err, paxos.ErrCompacted) {
		return false, errCompacted(err)
	}
	if err != nil {
		return false, err
	}
	from, skip := c.next, c.skip
	c.skip = 0
	for k, cmd := range cmds {
		if skip > 0 && cmd.Index == from {
			skip--
			continue
		}
		before := c.st
		var v masterlease.Verdict
		c.st, v = masterlease.Step(c.st, cmd.Index, cmd.Data)
		rewound, err := c.stepSplit(before, v, cmds[:k])
		if err != nil {
			return false, fmt.Errorf("log index %d: %w", cmd.Index, err)
		}
		if rewound {
			return true, nil
		}
		if v.Entry.Kind != masterlease.KindBatch && c.st.Partial.IsZero() {
			c.skipPartial = false // a term change voided a split transaction
		}
	}
	moved = next > c.next
	c.next = next
	return moved, nil
}

// takeBatch handles a valid batch of whole transactions.
func (c *logCursor) takeBatch(b masterlease.Batch) error {
	return c.push(b.Events)
}

func (c *logCursor) push(events []byte) error {
	txns, err := binlog.SplitTxns(events)
	if err != nil {
		return err
	}
	for _, t := range txns {
		if !c.found {
			if t.GTID == c.after {
				c.found = true
			}
			continue
		}
		c.queue = append(c.queue, t)
	}
	return nil
}

func (c *logCursor) Next(ctx context.Context) (binlog.Txn, error) {
	if err := c.ready(ctx); err != nil {
		return binlog.Txn{}, err
	}
	t := c.queue[0]
	c.queue[0] = binlog.Txn{} // the array, behind the slice, would keep it
	c.queue = c.queue[1:]
	return t, nil
}

// NextBatch implements replserver.BatchCursor: what one read of the log
// yielded goes to the endpoint at once.
func (c *logCursor) NextBatch(ctx context.Context, max int) ([]binlog.Txn, error) {
	if err := c.ready(ctx); err != nil {
		return nil, err
	}
	n := min(len(c.queue), max)
	out := c.queue[:n:n] // the cursor appends only past its queue's end
	c.queue = c.queue[n:]
	if len(c.queue) == 0 {
		// The next fill starts a new array: this one, holding out's
		// pieces, goes when the endpoint is done with out.
		c.queue = nil
	}
	return out, nil
}

// ready fills the queue, waiting for the log to grow, until it holds a
// transaction.
func (c *logCursor) ready(ctx context.Context) error {
	for len(c.queue) == 0 {
		moved, err := c.fill()
		if err != nil {
			return err
		}
		if !moved && len(c.queue) == 0 {
			if err := c.wait(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *logCursor) Close() error { return nil }
