package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/capture"
	"phxgo/masterlease"
	"phxgo/paxos"
)

// ErrBatchRejected: a batch of this master's was chosen but judged invalid
// (its term ended, or its chain broke), or could not be built. The master
// must stop at once.
var ErrBatchRejected = errors.New("binlogd: batch rejected by the log")

// leaseSink turns captured transactions into BinlogBatch entries of one
// term and queues them on the Paxos log.
//
// Capture calls Propose from one goroutine in stream order, and Propose
// only queues (paxos.Node.ProposeAsync, through the lease's checks), so
// the log receives the batches in stream order and, while one leader
// leads under one ballot, chooses them in that order: each is valid on
// arrival, none is proposed twice. Capture then calls Wait in the same
// order from one goroutine.
//
// After a Paxos leader change a later batch can be chosen before an
// earlier one (paxos.Node.ProposeAsync's order guarantee ends there). It
// is then rejected with a chain break that changes nothing, and Wait,
// which runs only after every earlier batch was found valid, proposes it
// again. Every rejected entry counts in rejected
// (phxgo_capture_rejected_batches_total), so a steady state with
// rejections shows. Any other rejection, an unknown outcome, or a chain
// break after a batch that failed is fatal for the term.
type leaseSink struct {
	lease    *masterlease.Lease
	queue    masterlease.QueueFunc
	epoch    uint64
	maxFrag  int // bytes of events per entry
	rejected prometheus.Counter
	log      *slog.Logger

	failed atomic.Bool // some Wait failed: no later batch may be re-proposed

	// ahead: fragments of big transactions queued on the log, oldest
	// first, across Propose calls (only Propose, one goroutine, touches
	// it). At most fragmentsAhead of them are queued and not yet applied.
	ahead []*masterlease.BatchProposal
}

// entryEventBytes bounds the binlog events of one log entry (a batch of
// transactions, or a fragment of a bigger one): the Paxos engine holds a
// window of values in memory and a Promise carries them, so a big
// transaction travels as many bounded fragments, not as one value.
const entryEventBytes = 512 << 10

func newSink(l *masterlease.Lease, queue masterlease.QueueFunc, epoch uint64, maxFrag int, rejected prometheus.Counter, log *slog.Logger) *leaseSink {
	return &leaseSink{lease: l, queue: queue, epoch: epoch, maxFrag: maxFrag, rejected: rejected, log: log}
}

// newLeaseSink is this node's sink for term epoch.
func (n *Node) newLeaseSink(epoch uint64) *leaseSink {
	return newSink(n.lease, queueOn(n.px), epoch, entryEventBytes, n.m.rejectedBatches, n.log)
}

// queueOn adapts px.ProposeAsync to the lease's QueueFunc. Batches skip
// the lease's window gate (windows.go): a batch never ends the term.
func queueOn(px *paxos.Node) masterlease.QueueFunc {
	return func(ctx context.Context, cmd []byte) (masterlease.Waiter, error) {
		p, err := px.ProposeAsync(ctx, cmd)
		if err != nil {
			return nil, err
		}
		return &sharedWaiter{w: p, turn: make(chan struct{}, 1)}, nil
	}
}

// sharedWaiter lets two goroutines wait for one proposal: Propose paces
// on a fragment (ahead) that capture's waiter may be awaiting at the same
// time, and paxos.Proposal.Wait is for one caller at a time.
type sharedWaiter struct {
	w    masterlease.Waiter
	turn chan struct{} // held by the caller inside w.Wait
	done bool          // under turn: idx, res, err are final
	idx  uint64
	res  any
	err  error
}

func (s *sharedWaiter) Wait(ctx context.Context) (uint64, any, error) {
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return 0, nil, ctx.Err()
	}
	defer func() { <-s.turn }()
	if !s.done {
		idx, res, err := s.w.Wait(ctx)
		if err != nil && err == ctx.Err() {
			return idx, res, err // not final: another caller may still wait
		}
		s.idx, s.res, s.err, s.done = idx, res, err, true
	}
	return s.idx, s.res, s.err
}

// Propose queues txns' entries on the log, in order, and returns at once.
func (s *leaseSink) Propose(ctx context.Context, info capture.BatchInfo, txns []binlog.Txn) (capture.Pending, error) {
	if len(txns) == 0 {
		return nil, fmt.Errorf("%w: empty batch %d", ErrBatchRejected, info.Seq)
	}
	if err := contiguous(info.Prev, txns); err != nil {
		return nil, err
	}
	pb := &pendingBatch{s: s, info: info, entries: s.entries(info.Prev, txns)}
	for _, e := range pb.entries {
		frag := e.More || e.Continued
		for frag && len(s.ahead) >= fragmentsAhead {
			// A big transaction's fragments are not queued all at once,
			// in this batch or the ones before it: megabytes queued
			// ahead of a lease renewal let the lease expire (seen with
			// a 20 MB transaction, and with capture's 2 MiB pieces
			// queued back to back). Its outcome is judged by Wait; this
			// only paces the queue.
			_, _ = s.ahead[0].Wait(ctx)
			s.ahead[0] = nil
			s.ahead = s.ahead[1:]
			if ctx.Err() != nil {
				return nil, fmt.Errorf("batch %d: %w", info.Seq, ctx.Err())
			}
		}
		p, err := s.lease.ProposeBatchAsync(ctx, s.queue, e)
		if err != nil {
			// Entries queued before this one have unknown outcomes:
			// capture stops and the term ends.
			return nil, fmt.Errorf("batch %d, entry ending %s: %w", info.Seq, binlog.GTID(e.Last), err)
		}
		pb.props = append(pb.props, p)
		if frag {
			s.ahead = append(s.ahead, p)
		}
	}
	return pb, nil
}

// fragmentsAhead bounds the fragments of big transactions queued on the
// log and not yet applied, across Propose calls. Capture hands a big
// transaction over in pieces of FragmentBytes (2 MiB, 4 entries of
// entryEventBytes) back to back; a bound per Propose alone let those
// pieces queue up to capture's BufferBytes (16 MiB) ahead of a lease
// renewal, and the lease expired mid-transaction on a loaded host (make
// bench-big, 256 MiB, 4 per Propose). The bytes held stay bounded by
// capture's BufferBytes either way; this bounds what a renewal waits
// behind: 2 x 512 KiB, no more than the old 1 per Propose allowed at a
// piece boundary, with the log never idle between two fragments.
// scripts/bench-big-ahead.sh (256 MiB COMMIT, phxgo s / plain MariaDB s,
// two rounds on a host at load 15-27, the first with the bound per
// Propose): 1: 26.5/10.6, 18.9/6.6; 2: 22.5/5.1, 23.1/2.5; 4: 15.0/5.0,
// 28.3/6.2; 8: 24.2/2.5, then the lease expired mid-COMMIT. The spread
// is the host's; 8 showed the risk.
const fragmentsAhead = 2

// pendingBatch is one Propose call's entries, queued in order.
type pendingBatch struct {
	s       *leaseSink
	info    capture.BatchInfo
	entries []masterlease.Batch
	props   []*masterlease.BatchProposal
}

// Wait returns nil once every entry of the batch is chosen and valid.
func (p *pendingBatch) Wait(ctx context.Context) error {
	s := p.s
	for i, e := range p.entries {
		err := s.await(ctx, p.props[i], e)
		if err != nil {
			s.failed.Store(true)
			return fmt.Errorf("batch %d: %w", p.info.Seq, err)
		}
	}
	return nil
}

// await waits for entry e's verdict and re-proposes it once if it was
// chosen ahead of its predecessor (which, since Wait runs in order, is
// valid by now).
func (s *leaseSink) await(ctx context.Context, prop *masterlease.BatchProposal, e masterlease.Batch) error {
	v, err := prop.Wait(ctx)
	if err != nil {
		return fmt.Errorf("entry ending %s: %w", binlog.GTID(e.Last), err)
	}
	if !v.Valid {
		s.rejected.Inc()
		s.log.Warn("capture: batch rejected by the log", "prev", binlog.GTID(e.Prev).String(),
			"last", binlog.GTID(e.Last).String(), "index", v.Index, "err", v.Err())
		if !aheadOfPredecessor(v, e) || s.failed.Load() {
			return fmt.Errorf("%w: %w", ErrBatchRejected, v.Err())
		}
		if v, err = s.lease.ProposeBatch(ctx, e); err != nil {
			return fmt.Errorf("entry ending %s, proposed again: %w", binlog.GTID(e.Last), err)
		}
		if !v.Valid {
			s.rejected.Inc()
			return fmt.Errorf("%w: proposed again: %w", ErrBatchRejected, v.Err())
		}
	}
	// Invariant: the verdict is this entry's own.
	if v.Entry.Kind != masterlease.KindBatch || v.Entry.Batch.Last != e.Last || v.Entry.Batch.Prev != e.Prev {
		return fmt.Errorf("%w: verdict for another entry (%v %v..%v, want %v..%v)", ErrBatchRejected,
			v.Entry.Kind, v.Entry.Batch.Prev, v.Entry.Batch.Last, e.Prev, e.Last)
	}
	return nil
}

// aheadOfPredecessor reports whether v rejected e only because the log
// had not yet applied e's predecessor: a chain break whose expected GTID
// is before e's prev in the same term and domain. A fork or a duplicate
// (expected at or after prev) is not retried.
func aheadOfPredecessor(v masterlease.Verdict, e masterlease.Batch) bool {
	if v.Reason != masterlease.ReasonChain || v.State.Epoch != e.Epoch {
		return false
	}
	if v.Expected.IsZero() {
		return !e.Prev.IsZero()
	}
	return v.Expected.Domain == e.Prev.Domain && v.Expected.Seq < e.Prev.Seq
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
// together, and a transaction bigger than maxFrag, or a piece of one
// that capture streams (binlog.Txn More/Offset), split into fragments
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
	for i, t := range txns {
		if !t.Whole() || len(t.Events) > s.maxFrag {
			flush()
			for off := 0; off < len(t.Events); off += s.maxFrag {
				end := min(off+s.maxFrag, len(t.Events))
				at := t.Offset + uint64(off)
				b := masterlease.Batch{Epoch: s.epoch, Prev: masterlease.GTID(prev), Last: masterlease.GTID(t.GTID),
					Events: t.Events[off:end], More: end < len(t.Events) || t.More, Continued: at > 0, Offset: at}
				if !b.More {
					b.TxnCount = 1
				}
				out = append(out, b)
			}
			if !t.More {
				prev = t.GTID
			}
			continue
		}
		if cur != nil && len(cur.Events)+len(t.Events) > s.maxFrag {
			flush()
		}
		if cur == nil {
			cur = &masterlease.Batch{Epoch: s.epoch, Prev: masterlease.GTID(prev)}
			if n := s.runBytes(txns[i:]); n > len(t.Events) {
				// Sized once: appending from nil grew and cleared
				// the buffer several times per entry (4% of the
				// master's binlogd at 16 threads).
				cur.Events = make([]byte, 0, n)
			} else {
				cur.Events = t.Events // alone in its entry: no copy
				cur.Last = masterlease.GTID(t.GTID)
				cur.TxnCount++
				continue
			}
		}
		cur.Events = append(cur.Events, t.Events...)
		cur.Last = masterlease.GTID(t.GTID)
		cur.TxnCount++
	}
	flush()
	return out
}

// runBytes is the size of the entry that entries builds from the whole
// transactions at the head of txns: they join until the next would pass
// maxFrag or is not whole.
func (s *leaseSink) runBytes(txns []binlog.Txn) int {
	n := 0
	for _, t := range txns {
		if !t.Whole() || len(t.Events) > s.maxFrag || n > 0 && n+len(t.Events) > s.maxFrag {
			break
		}
		n += len(t.Events)
	}
	return n
}
