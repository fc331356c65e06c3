package sqlproxy

import "time"

// Idle-in-transaction bound for forwarded sessions (Config.IdleInTxTimeout).
//
// A client on a non-master node runs its transaction through a hop to
// the master's proxy. If that node is partitioned away, the hop goes
// silent and the master's session sits idle in the transaction, holding
// row locks that block every other client. Keepalive (PeerTimeout) ends
// the hop once the kernel gives up on it; this timer bounds the case
// keepalive cannot see (the hop is alive but its client went quiet).
//
// The timer runs while the session goroutine waits for the client's next
// command. When it fires it takes the held backend (under mu, like the
// hold timer) and closes it: MariaDB rolls the transaction back. The
// session learns about it when the next command arrives (idleTxDisarm)
// and enters the aborted state, so that command gets 1290/40001 and
// nothing runs as if the transaction had survived.
//
// Invariant: between idleTxArm and idleTxDisarm the session goroutine
// does not touch held; after idleTxDisarm the timer touches nothing.

// idleTxArm starts the timer if the session is a hop inside a transaction.
func (s *session) idleTxArm() {
	d := s.srv.cfg.IdleInTxTimeout
	if !s.hop || !s.open() || d <= 0 {
		return
	}
	s.mu.Lock()
	s.idleTxArmed = true
	if s.idleTxTimer == nil {
		s.idleTxTimer = time.AfterFunc(d, s.idleTxExpired)
	} else {
		s.idleTxTimer.Reset(d)
	}
	s.mu.Unlock()
}

// idleTxDisarm stops the timer; if it had fired, the transaction is gone
// and the session enters the aborted state.
func (s *session) idleTxDisarm() {
	if s.idleTxTimer == nil {
		return
	}
	s.mu.Lock()
	fired := s.idleTxFired
	s.idleTxArmed, s.idleTxFired = false, false
	s.idleTxTimer.Stop()
	s.mu.Unlock()
	if fired {
		s.step(txEvent{kind: evIdleTxFired})
	}
}

func (s *session) idleTxExpired() {
	s.mu.Lock()
	if !s.idleTxArmed {
		s.mu.Unlock()
		return
	}
	b := s.held
	s.held, s.armed = nil, false
	s.idleTxArmed, s.idleTxFired = false, true
	s.mu.Unlock()
	if b != nil {
		b.close() // MariaDB (or the next proxy) rolls the transaction back
	}
	s.srv.metrics.errors.WithLabelValues("idle_tx").Inc()
	s.srv.log.Info("sqlproxy: forwarded session idle in transaction: rolled back",
		"id", s.id, "after", s.srv.cfg.IdleInTxTimeout)
}
