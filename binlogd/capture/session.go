package capture

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// session runs one dump connection: a reader goroutine cuts the stream
// into transactions; this goroutine batches them and proposes each batch
// in stream order (pipeline), retires batches in order and sends one
// cumulative ACK per retirement round. It returns when the connection
// fails (after every in-flight batch has an outcome, so the next session
// resumes exactly after the last durable GTID) or on a fatal error.
// progressed reports whether the connection streamed anything.
func (c *Capture) session(ctx context.Context, db *sql.DB) (progressed bool, err error) {
	if err := c.killZombies(ctx, db); err != nil {
		return false, err
	}
	s, err := dialStream(ctx, c.cfg, c.durable)
	if err != nil {
		return false, err
	}
	c.sessions++
	if c.sessions > 1 {
		c.stats.update(func(st *Stats) { st.Reconnects++ })
	}
	c.log.Info("capture: streaming", "addr", c.cfg.Addr, "after", c.durable.String(), "conn_id", s.id)
	if c.durablePos.File != "" {
		// The stream resumes after the durable GTID, so the master never
		// re-sends (nor re-flags) a transaction that became durable while
		// the old connection died: its waiting COMMIT needs this ACK.
		if err := s.sendAck(c.durablePos); err != nil {
			s.close()
			return false, fmt.Errorf("capture: send ACK %v: %w", c.durablePos, err)
		}
	}

	sctx, stop := context.WithCancel(ctx)
	units := make(chan *unit, 256)
	readErr := make(chan error, 1)
	readerDone := make(chan struct{})
	buf := newBudget(c.cfg.BufferBytes)
	buf.onPeak = func(peak int) { c.stats.update(func(st *Stats) { st.PeakBuffered = max(st.PeakBuffered, peak) }) }
	g := newGrouper()
	g.fragBytes = c.cfg.FragmentBytes
	if !c.partial.gtid.IsZero() {
		r := c.partial
		g.resume = &r
		c.stats.update(func(st *Stats) { st.Resumes++ })
		c.log.Info("capture: resuming a split transaction", "gtid", r.gtid.String(), "durable_bytes", r.bytes)
	}
	go func() {
		defer close(readerDone)
		readErr <- c.read(sctx, s, g, buf, units)
	}()

	p := newPipeline(ctx, c, s)
	p.buf = buf
	err = p.run(units, readErr)
	stop()
	s.close()
	<-readerDone
	// A batch rejected in run is the cause; drain then only reports the
	// batches after it ("follows a batch that is not durable"). Otherwise
	// a rejection drain finds outranks the stream error that ended run.
	if werr := p.drain(); werr != nil && ctx.Err() == nil && !errors.Is(err, ErrRejected) {
		err = werr
	}
	return p.got, err
}

// read is the reader goroutine: stream -> grouper -> units, each unit's
// bytes taken from buf first (reading pauses while the session holds
// too much that is not durable yet).
func (c *Capture) read(ctx context.Context, s *stream, g *grouper, buf *budget, out chan<- *unit) error {
	for {
		ev, needAck, err := s.next()
		if err != nil {
			return err
		}
		u, err := g.feed(ev, needAck)
		if err != nil {
			return err
		}
		if u == nil {
			continue
		}
		if err := buf.take(ctx, len(u.txn.Events)); err != nil {
			return err
		}
		select {
		case out <- u:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
