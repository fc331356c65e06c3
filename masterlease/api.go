package masterlease

import (
	"context"
	"fmt"
	"time"
)

func (l *Lease) logOrErr() (Log, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lg == nil {
		return nil, ErrNotAttached
	}
	return l.lg, nil
}

// propose proposes cmd and returns its Verdict. An error wraps
// ErrOutcomeUnknown (the entry may still be chosen) or ErrNotAttached.
func (l *Lease) propose(ctx context.Context, lg Log, cmd []byte) (Verdict, error) {
	_, res, err := lg.Propose(ctx, cmd)
	return verdictOf(res, err)
}

// verdictOf is the Verdict a chosen-and-applied entry's result carries;
// a failed wait or a result of another type is ErrOutcomeUnknown (the
// entry may still be chosen).
func verdictOf(res any, err error) (Verdict, error) {
	if err != nil {
		return Verdict{}, fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
	}
	v, ok := res.(Verdict)
	if !ok {
		return Verdict{}, fmt.Errorf("%w: log returned %T, not a Verdict", ErrOutcomeUnknown, res)
	}
	return v, nil
}

// ProposeBatch proposes a BinlogBatch and returns its verdict once it is
// chosen and applied here. It refuses with ErrNotMaster, proposing
// nothing, unless this node holds a valid lease for b.Epoch. The checksum
// is computed when b.Checksum is 0. A non-nil error other than
// ErrNotMaster means the outcome is unknown: the batch may still be chosen
// (valid or not) later. A rejected batch is (verdict with Valid false,
// nil error); verdict.Err() says why.
func (l *Lease) ProposeBatch(ctx context.Context, b Batch) (Verdict, error) {
	lg, err := l.logOrErr()
	if err != nil {
		return Verdict{}, err
	}
	l.mu.Lock()
	dl := l.deadlineLocked(l.clock.Now())
	epoch := l.st.Epoch
	l.mu.Unlock()
	if dl.IsZero() || b.Epoch != epoch {
		return Verdict{}, fmt.Errorf("%w: batch for epoch %d, current epoch %d, own deadline %v",
			ErrNotMaster, b.Epoch, epoch, dl)
	}
	return l.propose(ctx, lg, EncodeBatch(b))
}

// Fence ends this node's own term: it first drops its own deadline (it
// stops serving before proposing), stands down for one LeaseDuration, then
// proposes Fence for the current epoch. ErrNotMaster if this node is not
// the master of the current term (by the state).
func (l *Lease) Fence(ctx context.Context) (Verdict, error) {
	l.mu.Lock()
	epoch, master := l.st.Epoch, l.st.Master
	l.mu.Unlock()
	if master != l.id {
		return Verdict{}, fmt.Errorf("%w: master of epoch %d is %d", ErrNotMaster, epoch, master)
	}
	return l.FenceEpoch(ctx, epoch)
}

// FenceEpoch proposes Fence for term epoch from any node (recovery fences
// the term of a crashed master this way). If this node is that term's
// master it drops its deadline and stands down first. The verdict is
// invalid (ErrStaleEpoch, ErrNoMaster) if that term already ended.
func (l *Lease) FenceEpoch(ctx context.Context, epoch uint64) (Verdict, error) {
	lg, err := l.logOrErr()
	if err != nil {
		return Verdict{}, err
	}
	return l.propose(ctx, lg, l.prepareFence(epoch))
}

// prepareFence steps down if this node is the master of epoch and returns
// the Fence to propose.
func (l *Lease) prepareFence(epoch uint64) []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.st.Epoch == epoch && l.st.Master == l.id {
		l.stepDownLocked()
	}
	return EncodeFence(Fence{Epoch: epoch, From: l.id})
}

// Switchover hands the lease to node to: the master drops its own deadline
// to zero (it stops serving before proposing), stands down for one
// LeaseDuration, and proposes a grant for to. The new master has no
// deadline of its own from a grant it did not propose, so its election
// loop at once wins a fresh term for itself (epoch advances twice). Run it
// only when to has caught up (binlogd checks). ErrNotMaster if this node
// does not hold a valid lease.
//
// A renewal of this node's own, queued before it stepped down, may be
// chosen ahead of the grant and reject it for a changed version. Such a
// renewal leaves this node master of the same term and cannot give it its
// deadline back (a renewal extends only an unbroken own lease), so the
// grant is proposed again on the new version; any other change (a new
// term, a fence) ends the switchover with the rejection.
func (l *Lease) Switchover(ctx context.Context, to uint32) (Verdict, error) {
	lg, err := l.logOrErr()
	if err != nil {
		return Verdict{}, err
	}
	r, err := l.prepareSwitchover(to)
	if err != nil {
		return Verdict{}, err
	}
	epoch := r.epoch
	for attempt := 0; ; attempt++ {
		v, err := l.propose(ctx, lg, r.grant(to))
		ownRenewal := err == nil && v.Reason == ReasonVersionMismatch &&
			v.State.Master == l.id && v.State.Epoch == epoch
		if !ownRenewal || attempt == maxSwitchoverRetries {
			return v, err
		}
		r.version = v.State.Version
	}
}

// maxSwitchoverRetries bounds the grants Switchover proposes again after
// its own renewals overtook them: only renewals queued before it stepped
// down can, a handful at most.
const maxSwitchoverRetries = 8

// switchoverFrom is the term a switchover hands over: its epoch and the
// lease version the grant must see.
type switchoverFrom struct{ epoch, version uint64 }

// grant is the LeaseRequest that hands the term to node to.
func (f switchoverFrom) grant(to uint32) []byte {
	return EncodeLeaseRequest(LeaseRequest{Candidate: to, SeenVersion: f.version})
}

// prepareSwitchover steps down and returns the term to hand over.
func (l *Lease) prepareSwitchover(to uint32) (switchoverFrom, error) {
	if to == 0 {
		return switchoverFrom{}, fmt.Errorf("%w: switchover to node 0", ErrMalformed)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.deadlineLocked(l.clock.Now()).IsZero() {
		return switchoverFrom{}, fmt.Errorf("%w: switchover needs the lease", ErrNotMaster)
	}
	from := switchoverFrom{epoch: l.st.Epoch, version: l.st.Version}
	l.stepDownLocked()
	return from, nil
}

func (l *Lease) stepDownLocked() {
	l.own.deadline, l.own.start = time.Time{}, time.Time{}
	l.standDownUntil = l.clock.Now().Add(l.cfg.LeaseDuration)
	l.publishLocked()
}

// Sync runs a read barrier through the log and returns the status after
// it: every entry chosen before the call is applied in it.
func (l *Lease) Sync(ctx context.Context) (Status, error) {
	lg, err := l.logOrErr()
	if err != nil {
		return Status{}, err
	}
	if _, err := lg.Barrier(ctx); err != nil {
		return Status{}, fmt.Errorf("masterlease: barrier: %w", err)
	}
	return l.Status(), nil
}

// Waiter is a command queued on the log: Wait returns its index and the
// Verdict Apply returned for it once it is chosen and applied locally
// (paxos.Proposal). An error means the outcome is unknown.
type Waiter interface {
	Wait(ctx context.Context) (index uint64, result any, err error)
}

// QueueFunc queues cmd on the log without waiting for its outcome, in call
// order: paxos.Node.ProposeAsync, adapted to return a Waiter. An error
// means cmd was not queued.
type QueueFunc func(ctx context.Context, cmd []byte) (Waiter, error)

// BatchProposal is a BinlogBatch queued by ProposeBatchAsync.
type BatchProposal struct{ w Waiter }

// ProposeBatchAsync is ProposeBatch that returns as soon as queue has
// queued b; Wait returns its verdict. Batches queued one after another
// (the call returned before the next) keep that order in the log as long
// as the queue's order guarantee holds (paxos.Node.ProposeAsync: one
// leader under one ballot); after a leader change a later batch may be
// chosen first and is then rejected for a broken chain (ReasonChain), so a
// caller that queues a chain of batches must still check every verdict.
// Errors: ErrNotMaster (nothing queued, as for ProposeBatch), or queue's
// error wrapped (not queued).
func (l *Lease) ProposeBatchAsync(ctx context.Context, queue QueueFunc, b Batch) (*BatchProposal, error) {
	l.mu.Lock()
	dl := l.deadlineLocked(l.clock.Now())
	epoch := l.st.Epoch
	l.mu.Unlock()
	if dl.IsZero() || b.Epoch != epoch {
		return nil, fmt.Errorf("%w: batch for epoch %d, current epoch %d, own deadline %v",
			ErrNotMaster, b.Epoch, epoch, dl)
	}
	w, err := queue(ctx, EncodeBatch(b))
	if err != nil {
		return nil, fmt.Errorf("masterlease: queue batch ending %v: %w", b.Last, err)
	}
	return &BatchProposal{w: w}, nil
}

// Wait returns the batch's verdict once it is chosen and applied here, as
// ProposeBatch does: a rejected batch is (Valid false, nil error); an
// error wraps ErrOutcomeUnknown (the batch may still be chosen later).
// Not safe for concurrent use.
func (p *BatchProposal) Wait(ctx context.Context) (Verdict, error) {
	_, res, err := p.w.Wait(ctx)
	return verdictOf(res, err)
}
