package replserver

import (
	"context"
	"fmt"
	"sync"

	"phxgo/binlogd/binlog"
)

// MemorySource is an append-only in-memory Source for one GTID domain,
// with a purge point. It is safe for concurrent use.
type MemorySource struct {
	domain uint32

	mu sync.Mutex
	// Invariant: txns[i] has absolute index purgedCount+i, and GTID
	// sequence numbers strictly increase along the log.
	txns        []binlog.Txn
	purgedCount int
	purgedLast  binlog.GTID   // GTID of the last purged txn, zero if none
	grown       chan struct{} // closed and replaced by every Append and Purge
}

// NewMemorySource returns an empty log for GTID domain domain.
func NewMemorySource(domain uint32) *MemorySource {
	return &MemorySource{domain: domain, grown: make(chan struct{})}
}

// Append adds transactions at the end of the log. A transaction must be in
// the source's domain, have a sequence number above the last one, and frame
// as whole binlog events with a CRC32 footer each.
func (m *MemorySource) Append(txns ...binlog.Txn) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	last := m.lastLocked()
	for _, t := range txns {
		if t.GTID.Domain != m.domain {
			return fmt.Errorf("%w: GTID %s is not in domain %d", ErrBadTxn, t.GTID, m.domain)
		}
		if t.GTID.Seq <= last.Seq {
			return fmt.Errorf("%w: GTID %s does not follow %s", ErrBadTxn, t.GTID, last)
		}
		evs, err := binlog.SplitEvents(t.Events)
		if err != nil || len(evs) == 0 {
			return fmt.Errorf("%w: GTID %s: events do not frame: %v", ErrBadTxn, t.GTID, err)
		}
		for _, e := range evs {
			if len(e) < binlog.HeaderLen+checksumLen {
				return fmt.Errorf("%w: GTID %s: event too short for a CRC32 footer", ErrBadTxn, t.GTID)
			}
		}
		last = t.GTID
	}
	m.txns = append(m.txns, txns...)
	m.wakeLocked()
	return nil
}

// PurgeThrough drops every transaction up to and including g, which must
// be in the log. Replicas positioned before g then get ErrPurged.
func (m *MemorySource) PurgeThrough(g binlog.GTID) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, t := range m.txns {
		if t.GTID == g {
			m.purgedCount += i + 1
			m.purgedLast = g
			m.txns = append([]binlog.Txn(nil), m.txns[i+1:]...)
			m.wakeLocked()
			return nil
		}
	}
	return fmt.Errorf("%w: %s", ErrUnknownPosition, g)
}

// Last is the GTID of the newest transaction (zero when none ever).
func (m *MemorySource) Last() binlog.GTID {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastLocked()
}

// Len is the number of transactions ever appended.
func (m *MemorySource) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.purgedCount + len(m.txns)
}

func (m *MemorySource) lastLocked() binlog.GTID {
	if len(m.txns) > 0 {
		return m.txns[len(m.txns)-1].GTID
	}
	return m.purgedLast
}

func (m *MemorySource) wakeLocked() {
	close(m.grown)
	m.grown = make(chan struct{})
}

// Open implements Source.
func (m *MemorySource) Open(_ context.Context, pos binlog.GTIDList) (Cursor, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, g := range pos {
		if g.Domain != m.domain {
			return nil, fmt.Errorf("%w: replica position %s has domain %d, this log serves only domain %d", ErrUnknownPosition, pos, g.Domain, m.domain)
		}
	}
	g, ok := pos.Domain(m.domain)
	last := m.lastLocked()
	switch {
	case !ok || g.IsZero():
		if m.purgedCount > 0 {
			return nil, fmt.Errorf("%w: the replica has no position and the log is purged through %s", ErrPurged, m.purgedLast)
		}
		return &memCursor{m: m, next: 0}, nil
	case g == m.purgedLast:
		return &memCursor{m: m, next: m.purgedCount}, nil
	}
	for i, t := range m.txns {
		if t.GTID == g {
			return &memCursor{m: m, next: m.purgedCount + i + 1}, nil
		}
	}
	switch {
	case g.Seq > last.Seq:
		return nil, fmt.Errorf("%w: replica is at %s, ahead of the log's last GTID %q (extra transactions on the replica?)", ErrUnknownPosition, g, last.String())
	case g.Seq < m.purgedLast.Seq:
		return nil, fmt.Errorf("%w: replica is at %s, the log is purged through %s", ErrPurged, g, m.purgedLast)
	default:
		return nil, fmt.Errorf("%w: replica's GTID %s is not in the log (forked: another server wrote that sequence number)", ErrUnknownPosition, g)
	}
}

type memCursor struct {
	m    *MemorySource
	next int // absolute index of the next txn
}

func (c *memCursor) Next(ctx context.Context) (binlog.Txn, error) {
	for {
		c.m.mu.Lock()
		if c.next < c.m.purgedCount {
			c.m.mu.Unlock()
			return binlog.Txn{}, fmt.Errorf("%w: purged through %s while the replica was reading", ErrPurged, c.m.purgedLast)
		}
		if i := c.next - c.m.purgedCount; i < len(c.m.txns) {
			t := c.m.txns[i]
			c.m.mu.Unlock()
			c.next++
			return t, nil
		}
		grown := c.m.grown
		c.m.mu.Unlock()
		select {
		case <-grown:
		case <-ctx.Done():
			return binlog.Txn{}, ctx.Err()
		}
	}
}

// NextBatch implements BatchCursor.
func (c *memCursor) NextBatch(ctx context.Context, max int) ([]binlog.Txn, error) {
	t, err := c.Next(ctx)
	if err != nil {
		return nil, err
	}
	out := []binlog.Txn{t}
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	if c.next >= c.m.purgedCount {
		i := c.next - c.m.purgedCount
		n := min(len(c.m.txns)-i, max-1)
		out = append(out, c.m.txns[i:i+n]...)
		c.next += n
	}
	return out, nil
}

func (c *memCursor) Close() error { return nil }
