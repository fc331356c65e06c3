package node

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/capture"
	"phxgo/masterlease"
)

// ErrBatchRejected: a batch of this master's was chosen but judged invalid
// (its term ended, or its chain broke), or could not be built. The master
// must stop at once.
var ErrBatchRejected = errors.New("binlogd: batch rejected by the log")

// leaseSink turns captured transactions into BinlogBatch entries of one
// term and proposes them.
//
// Capture runs up to MaxInFlight Commit calls at once, on separate
// goroutines, so calls can reach the sink in any order; each call's place
// in the stream comes from capture.BatchFrom(ctx) (its dispatch number and
// the GTID before its first transaction), never from arrival order. A
// batch is proposed before its predecessors are chosen (pipelining). If
// Paxos orders it before a predecessor, it is rejected with a chain break;
// that entry changes nothing, and the sink proposes it again once the
// predecessor is valid. Any other rejection, or an unknown outcome, is
// fatal for the term.
type leaseSink struct {
	lease   *masterlease.Lease
	epoch   uint64
	maxFrag int // bytes of events per entry

	mu    sync.Mutex
	slots map[uint64]*slot // by capture dispatch number
}

// slot is one Commit call's outcome, for its successor.
type slot struct {
	done chan struct{} // closed when the call returns
	ok   bool          // written before done is closed
}

// entryEventBytes bounds the binlog events of one log entry (a batch of
// transactions, or a fragment of a bigger one): the Paxos engine holds a
// window of values in memory and a Promise carries them, so a big
// transaction travels as many bounded fragments, not as one value.
const entryEventBytes = 512 << 10

func newLeaseSink(l *masterlease.Lease, epoch uint64, maxFrag int) *leaseSink {
	return &leaseSink{lease: l, epoch: epoch, maxFrag: maxFrag, slots: map[uint64]*slot{}}
}

func (s *leaseSink) slot(seq uint64) *slot {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl, ok := s.slots[seq]
	if !ok {
		sl = &slot{done: make(chan struct{})}
		if seq == 0 {
			sl.ok = true
			close(sl.done)
		}
		s.slots[seq] = sl
	}
	return sl
}

// Commit makes txns durable and valid in the log, or returns an error.
func (s *leaseSink) Commit(ctx context.Context, txns []binlog.Txn) (err error) {
	info, ok := capture.BatchFrom(ctx)
	if !ok {
		return fmt.Errorf("%w: Commit without capture.BatchInfo", ErrBatchRejected)
	}
	mine := s.slot(info.Seq)
	defer func() {
		mine.ok = err == nil
		close(mine.done)
		s.mu.Lock()
		delete(s.slots, info.Seq-1) // only this call waited on it
		s.mu.Unlock()
	}()
	if len(txns) == 0 {
		return fmt.Errorf("%w: empty batch %d", ErrBatchRejected, info.Seq)
	}
	if err := contiguous(info.Prev, txns); err != nil {
		return err
	}
	var pred *slot
	if info.Seq > 1 {
		pred = s.slot(info.Seq - 1)
	} else {
		pred = s.slot(0)
	}
	for i, b := range s.entries(info.Prev, txns) {
		v, err := s.lease.ProposeBatch(ctx, b)
		if err != nil {
			return fmt.Errorf("batch ending %s: %w", binlog.GTID(b.Last), err)
		}
		if !v.Valid && i == 0 && v.Reason == masterlease.ReasonChain {
			// Maybe chosen ahead of its predecessor: wait for it and retry.
			select {
			case <-pred.done:
			case <-ctx.Done():
				return ctx.Err()
			}
			if !pred.ok {
				return fmt.Errorf("%w: predecessor of batch ending %s failed", ErrBatchRejected, binlog.GTID(b.Last))
			}
			if v, err = s.lease.ProposeBatch(ctx, b); err != nil {
				return fmt.Errorf("batch ending %s: %w", binlog.GTID(b.Last), err)
			}
		}
		if !v.Valid {
			return fmt.Errorf("%w: %v", ErrBatchRejected, v.Err())
		}
		// Invariant: the verdict is this entry's own.
		if v.Entry.Kind != masterlease.KindBatch || v.Entry.Batch.Last != b.Last || v.Entry.Batch.Prev != b.Prev {
			return fmt.Errorf("%w: verdict for another entry (%v %v..%v, want %v..%v)", ErrBatchRejected,
				v.Entry.Kind, v.Entry.Batch.Prev, v.Entry.Batch.Last, b.Prev, b.Last)
		}
	}
	// This batch being valid implies its predecessors are (the chain), but
	// successors read pred's outcome through ours: wait for it.
	select {
	case <-pred.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if !pred.ok {
		return fmt.Errorf("%w: predecessor failed", ErrBatchRejected)
	}
	return nil
}

// contiguous checks that txns follow prev one sequence number at a time.
// The log's chain check sees only a batch's first and last GTID, so the
// sink must never propose a batch with a hole in it.
func contiguous(prev binlog.GTID, txns []binlog.Txn) error {
	for _, t := range txns {
		if !prev.IsZero() && (t.GTID.Domain != prev.Domain || t.GTID.Seq != prev.Seq+1) {
			return fmt.Errorf("%w: transaction %s does not follow %s (gtid_seq_no set by hand, or a second domain?)", ErrBatchRejected, t.GTID, prev)
		}
		prev = t.GTID
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
					Events: t.Events[off:end], More: end < len(t.Events), Continued: off > 0, Offset: uint64(off)}
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
