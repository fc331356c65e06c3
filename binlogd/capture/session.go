package capture

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"phxgo/binlogd/binlog"
)

// batch is a run of whole transactions handed to one Sink.Commit.
type batch struct {
	info    BatchInfo
	txns    []binlog.Txn
	bytes   int
	end     Position  // where its last transaction ends
	needAck bool      // some transaction in it carries an ACK request
	askedAt time.Time // when its first ACK request arrived
	done    bool
	err     error
}

type result struct {
	b   *batch
	err error
}

// session runs one dump connection: a reader goroutine cuts the stream
// into transactions; this goroutine batches them, runs up to
// MaxInFlight Sink.Commit calls, retires batches in order and sends one
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
	go func() {
		defer close(readerDone)
		readErr <- c.read(sctx, s, units)
	}()

	p := &pipeline{c: c, s: s, ctx: ctx, results: make(chan result, c.cfg.MaxInFlight)}
	err = p.run(units, readErr)
	stop()
	s.close()
	<-readerDone
	if werr := p.drain(); werr != nil && ctx.Err() == nil {
		err = werr
	}
	return p.got, err
}

// read is the reader goroutine: stream -> grouper -> units.
func (c *Capture) read(ctx context.Context, s *stream, out chan<- *unit) error {
	g := newGrouper()
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
		select {
		case out <- u:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

type pipeline struct {
	c       *Capture
	s       *stream
	ctx     context.Context
	results chan result

	pending  *batch   // accumulating, not yet dispatched
	held     *unit    // did not fit in pending; reading pauses until it does
	inflight []*batch // dispatched, in order; retired from the front
	got      bool
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
			// Take whatever else is already queued before dispatching.
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
			r.b.done, r.b.err = true, r.err
			if err := p.retire(); err != nil {
				return err
			}
		}
		p.dispatch()
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
		c.stats.update(func(st *Stats) { st.Duplicates++ })
		if !u.needAck {
			return nil
		}
		if p.pending != nil || len(p.inflight) > 0 {
			return fmt.Errorf("%w: GTID %v went backwards behind queued work", ErrProtocol, g)
		}
		return p.ack(u.end, time.Now(), 0)
	}
	if !c.dispatched.IsZero() && g.Seq <= c.dispatched.Seq || p.pending != nil && g.Seq <= p.pending.txns[len(p.pending.txns)-1].GTID.Seq {
		return fmt.Errorf("%w: GTID %v is not after the previous transaction", ErrProtocol, g)
	}
	if p.pending != nil && p.pending.bytes+len(u.txn.Events) > c.cfg.BatchMaxBytes {
		p.held = u
		return nil
	}
	p.add(u)
	return nil
}

func (p *pipeline) add(u *unit) {
	if p.pending == nil {
		p.pending = &batch{}
	}
	b := p.pending
	b.txns = append(b.txns, u.txn)
	b.bytes += len(u.txn.Events)
	b.end = u.end
	if u.needAck && !b.needAck {
		b.needAck, b.askedAt = true, time.Now()
	}
}

// dispatch starts Commit for the pending batch if a slot is free.
func (p *pipeline) dispatch() {
	c := p.c
	for p.pending != nil && len(p.inflight) < c.cfg.MaxInFlight {
		b := p.pending
		p.pending = nil
		c.batchSeq++
		b.info = BatchInfo{Seq: c.batchSeq, Prev: c.dispatched}
		c.dispatched = b.txns[len(b.txns)-1].GTID
		p.inflight = append(p.inflight, b)
		go func() {
			err := c.sink.Commit(context.WithValue(p.ctx, batchKey{}, b.info), b.txns)
			p.results <- result{b, err}
		}()
		if p.held != nil {
			u := p.held
			p.held = nil
			p.add(u)
		}
	}
}

// retire makes the done prefix of inflight durable and sends one ACK
// for the newest position it covers, if any of it was asked for.
func (p *pipeline) retire() error {
	c := p.c
	var (
		pos    Position
		asked  time.Time
		txns   int
		needed bool
	)
	for len(p.inflight) > 0 && p.inflight[0].done {
		b := p.inflight[0]
		p.inflight = p.inflight[1:]
		if b.err != nil {
			return fmt.Errorf("%w: batch %d (%v..%v, %d txns): %w", ErrRejected, b.info.Seq,
				b.txns[0].GTID, b.txns[len(b.txns)-1].GTID, len(b.txns), b.err)
		}
		c.durable, c.durablePos = b.txns[len(b.txns)-1].GTID, b.end
		pos = b.end
		txns += len(b.txns)
		if b.needAck {
			if !needed || b.askedAt.Before(asked) {
				asked = b.askedAt
			}
			needed = true
		}
		c.stats.update(func(st *Stats) {
			st.Txns += uint64(len(b.txns))
			st.Bytes += uint64(b.bytes)
			st.Batches++
			st.MaxBatchTxns = max(st.MaxBatchTxns, len(b.txns))
			st.Durable = c.durable
		})
	}
	if !needed {
		return nil
	}
	return p.ack(pos, asked, txns)
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

// drain waits for every in-flight Commit and retires it (ACKs may fail
// on the dead connection; the next session's master re-asks for them).
func (p *pipeline) drain() error {
	var firstErr error
	for len(p.inflight) > 0 {
		r := <-p.results
		r.b.done, r.b.err = true, r.err
		for len(p.inflight) > 0 && p.inflight[0].done {
			b := p.inflight[0]
			p.inflight = p.inflight[1:]
			if b.err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("%w: batch %d (%v..%v, %d txns): %w", ErrRejected, b.info.Seq,
						b.txns[0].GTID, b.txns[len(b.txns)-1].GTID, len(b.txns), b.err)
				}
				// Later batches chain on this one: none can be durable
				// in order, so keep draining only to end their calls.
				continue
			}
			if firstErr == nil {
				p.c.durable, p.c.durablePos = b.txns[len(b.txns)-1].GTID, b.end
				p.c.stats.update(func(st *Stats) {
					st.Txns += uint64(len(b.txns))
					st.Bytes += uint64(b.bytes)
					st.Batches++
					st.MaxBatchTxns = max(st.MaxBatchTxns, len(b.txns))
					st.Durable = p.c.durable
				})
			}
		}
	}
	p.c.dispatched = p.c.durable
	return firstErr
}
