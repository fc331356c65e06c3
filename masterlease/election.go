package masterlease

import (
	"context"
	"errors"
	"time"
)

// Run is the election loop: every RetryInterval it renews this node's lease
// when due and tries to acquire it when this node's view says it expired.
// canAcquire is asked before every acquisition attempt (binlogd: "my
// MariaDB has applied the whole valid log"); nil means always. Run returns
// ctx.Err() when ctx ends.
func (l *Lease) Run(ctx context.Context, canAcquire func() bool) error {
	t := time.NewTicker(l.cfg.RetryInterval)
	defer t.Stop()
	for {
		l.notify()
		if cmd, ok := l.nextProposal(canAcquire); ok {
			l.proposeElection(ctx, cmd)
			l.notify()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

func (l *Lease) proposeElection(ctx context.Context, cmd []byte) {
	l.mu.Lock()
	lg := l.lg
	l.mu.Unlock()
	if lg == nil {
		return
	}
	// A proposal that takes longer than a renew interval is of little use;
	// if it is chosen later anyway, its grant counts from its start.
	start := time.Now()
	pctx, cancel := context.WithTimeout(ctx, l.cfg.RenewInterval)
	defer cancel()
	_, res, err := lg.Propose(pctx, cmd)
	// A candidate's failed attempt is routine (another node was faster);
	// a master's failed renewal is the first sign of a lease about to
	// lapse, so it is a warning with the time the lease has left.
	e, _ := Decode(cmd)
	renew := e.Kind == KindLease && e.Lease.Renew
	log := l.log.Debug
	if renew {
		log = l.log.Warn
	}
	switch {
	case err != nil && !errors.Is(err, context.Canceled):
		log("lease proposal outcome unknown", "renew", renew, "err", err, "took", time.Since(start).Round(time.Millisecond), "lease_left", l.ownLeft())
	case err == nil:
		if v, ok := res.(Verdict); ok && !v.Valid {
			log("lease proposal rejected", "renew", renew, "reason", v.Reason, "detail", v.Detail, "lease_left", l.ownLeft())
		}
	}
}

// ownLeft is how long this node's own lease still runs (0: none).
func (l *Lease) ownLeft() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	dl := l.deadlineLocked(now)
	if dl.IsZero() {
		return 0
	}
	return dl.Sub(now).Round(time.Millisecond)
}

// nextProposal decides whether this node proposes a LeaseRequest now, and
// if so records the proposal's start (before it is sent) and returns it.
func (l *Lease) nextProposal(canAcquire func() bool) ([]byte, bool) {
	r, ok := l.wantProposal()
	if !ok {
		return nil, false
	}
	if !r.Renew && canAcquire != nil && !canAcquire() {
		return nil, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.st.Version != r.SeenVersion {
		return nil, false // the state moved on; decide again next tick
	}
	now := l.clock.Now()
	l.lastAttempt = now
	if _, seen := l.proposedAt[r.SeenVersion]; !seen {
		l.proposedAt[r.SeenVersion] = now
	}
	return EncodeLeaseRequest(r), true
}

// wantProposal is the election rule:
//   - the holder with a valid deadline renews RenewInterval after the start
//     of the proposal that gave it;
//   - a node whose view says the lease expired (followerExpiry passed, or
//     the holder fenced itself, or it is the master in the state but has no
//     valid deadline of its own) asks for a new term, unless it stands down
//     after Fence/Switchover.
func (l *Lease) wantProposal() (LeaseRequest, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	if now.Before(l.lastAttempt.Add(l.cfg.RetryInterval)) {
		return LeaseRequest{}, false
	}
	st := l.st
	if st.Master == l.id && l.own.deadline.After(now) {
		if now.Before(l.own.start.Add(l.cfg.RenewInterval)) {
			return LeaseRequest{}, false
		}
		return LeaseRequest{Candidate: l.id, SeenVersion: st.Version, Renew: true}, true
	}
	if now.Before(l.standDownUntil) {
		return LeaseRequest{}, false
	}
	// Version 0: no lease was ever granted. A Fence by someone other than
	// the master leaves followerExpiry as it was: that master may still be
	// serving until its own deadline.
	expired := st.Version == 0 || st.Master == l.id || !l.followerExpiry.After(now)
	if !expired {
		return LeaseRequest{}, false
	}
	return LeaseRequest{Candidate: l.id, SeenVersion: st.Version}, true
}
