package node

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"phxgo/binlogd/binlog"
	"phxgo/masterlease"
)

// ErrBatchRejected: a batch of this master's was chosen but judged invalid
// (its term ended, or its chain broke). The master must stop at once.
var ErrBatchRejected = errors.New("binlogd: batch rejected by the log")

// leaseSink turns captured transactions into BinlogBatch entries of one
// term and proposes them. Capture hands batches over in binlog order, up
// to MaxInFlight at once; each batch's prev_gtid is the previous batch's
// last GTID, so batches are proposed before their predecessors are chosen
// (pipelining). If Paxos orders a batch before its predecessor, the batch
// is rejected with a chain gap; that entry changes nothing, and the sink
// proposes it again once the predecessor is valid. Any other rejection,
// or an unknown outcome, is fatal for the term.
type leaseSink struct {
	lease    *masterlease.Lease
	epoch    uint64
	maxFrag  int // bytes of events per entry
	mu       sync.Mutex
	last     binlog.GTID   // last GTID handed to a batch
	tail     chan struct{} // closed when the newest batch is valid
	tailDone *bool
}

func newLeaseSink(l *masterlease.Lease, epoch uint64, after binlog.GTID, maxFrag int) *leaseSink {
	done := make(chan struct{})
	close(done)
	ok := true
	return &leaseSink{lease: l, epoch: epoch, maxFrag: maxFrag, last: after, tail: done, tailDone: &ok}
}

// Commit makes txns durable and valid in the log, or returns an error.
func (s *leaseSink) Commit(ctx context.Context, txns []binlog.Txn) error {
	if len(txns) == 0 {
		return nil
	}
	s.mu.Lock()
	prev := s.last
	entries := s.entries(prev, txns)
	s.last = txns[len(txns)-1].GTID
	pred, predOK := s.tail, s.tailDone
	mine := make(chan struct{})
	ok := false
	s.tail, s.tailDone = mine, &ok
	s.mu.Unlock()
	defer close(mine)

	for i, b := range entries {
		v, err := s.lease.ProposeBatch(ctx, b)
		if err != nil {
			return fmt.Errorf("batch ending %s: %w", binlog.GTID(b.Last), err)
		}
		if !v.Valid && i == 0 && v.Reason == masterlease.ReasonChain {
			// Maybe chosen ahead of its predecessor: wait for it and retry.
			select {
			case <-pred:
			case <-ctx.Done():
				return ctx.Err()
			}
			if !*predOK {
				return fmt.Errorf("%w: predecessor of batch ending %s failed", ErrBatchRejected, binlog.GTID(b.Last))
			}
			if v, err = s.lease.ProposeBatch(ctx, b); err != nil {
				return fmt.Errorf("batch ending %s: %w", binlog.GTID(b.Last), err)
			}
		}
		if !v.Valid {
			return fmt.Errorf("%w: %v", ErrBatchRejected, v.Err())
		}
	}
	// Valid implies the predecessor is valid too (the chain), but keep the
	// done flags in order for successors waiting on us.
	<-pred
	ok = *predOK
	if !ok {
		return fmt.Errorf("%w: predecessor failed", ErrBatchRejected)
	}
	return nil
}

// entries builds the log entries for txns: whole transactions packed
// together, and a transaction bigger than maxFrag split into fragments
// that travel alone.
func (s *leaseSink) entries(prev binlog.GTID, txns []binlog.Txn) []masterlease.Batch {
	var out []masterlease.Batch
	var cur *masterlease.Batch
	flush := func() {
		if cur != nil {
			out = append(out, *cur)
			prev = binlog.GTID(cur.Last)
			cur = nil
		}
	}
	for _, t := range txns {
		if len(t.Events) > s.maxFrag {
			flush()
			for off := 0; off < len(t.Events); off += s.maxFrag {
				end := min(off+s.maxFrag, len(t.Events))
				b := masterlease.Batch{Epoch: s.epoch, Prev: masterlease.GTID(prev), Last: masterlease.GTID(t.GTID),
					Events: t.Events[off:end], More: end < len(t.Events), Continued: off > 0}
				if !b.More {
					b.TxnCount = 1
				}
				out = append(out, b)
			}
			prev = t.GTID
			continue
		}
		if cur != nil && len(cur.Events)+len(t.Events) > s.maxFrag {
			flush()
		}
		if cur == nil {
			cur = &masterlease.Batch{Epoch: s.epoch, Prev: masterlease.GTID(prev)}
		}
		cur.Events = append(cur.Events, t.Events...)
		cur.Last = masterlease.GTID(t.GTID)
		cur.TxnCount++
	}
	flush()
	return out
}
