package sqlproxy

import (
	"errors"
	"math/rand/v2"
	"time"

	"phxgo/sqlproxy/classify"
	"phxgo/sqlproxy/topology"
	"phxgo/sqlproxy/wire"
)

// routeKind says where a statement runs.
type routeKind uint8

const (
	routeMaster  routeKind = iota // this node is master: its MariaDB
	routeForward                  // the master node's proxy
	routeReplica                  // a replica's MariaDB (read/write split)
	routeDirect                   // the master's MariaDB, under a read window (window.go)
	numRoutes
)

func (k routeKind) String() string { return [...]string{"master", "forward", "replica", "direct"}[k] }

// decision is where route sends a statement: the master (master set;
// which node and connection that is, and the lease check, are resolved
// in acquire right before the send) or the given replica.
type decision struct {
	master  bool
	replica topology.Replica
}

// route applies the Cetus rules (rw-split modes) or sends everything to
// the master (linearizable, and any hop from another proxy).
func (s *session) route(info classify.Info) decision {
	m := decision{master: true}
	onlyMaster := s.mode == Linearizable || s.hop || s.causalUnknown
	rules := s.srv.rules() // a reload may replace them (reload.go)
	ok, hinted := replicaOK(s.txState, onlyMaster, rules.MasterPreferred, info)
	if !ok {
		return m
	}
	if p := rules.ReadMasterPercentage; !hinted && p > 0 && rand.IntN(100) < p {
		return m
	}
	return s.pickReplica()
}

// replicaOK reports whether a statement may run on a replica: never
// inside a transaction, with pinned state or autocommit off (t.toMaster),
// nor when the session must use the master (onlyMaster); otherwise a
// Cetus hint decides (hinted), else the statement's class and
// Config.MasterPreferred.
func replicaOK(t txState, onlyMaster, masterPreferred bool, info classify.Info) (ok, hinted bool) {
	if onlyMaster || t.toMaster() {
		return false, false
	}
	switch info.Hint {
	case classify.ReadWrite:
		return false, true
	case classify.ReadOnly:
		return info.Kind == classify.Read && !info.Locking && !info.Multi, true
	}
	return info.IsReadOnlyCandidate() && !masterPreferred, false
}

// pickReplica round-robins over healthy replicas; none means the master.
func (s *session) pickReplica() decision {
	reps := s.srv.health.healthy(s.srv.topo.View())
	if len(reps) == 0 {
		return decision{master: true}
	}
	if b := s.peekHeld(); b != nil && b.kind == routeReplica {
		for _, r := range reps { // stay on the held replica (hold window)
			if r.MySQLAddr == b.key.addr {
				return decision{replica: r}
			}
		}
	}
	n := s.srv.rr.Add(1)
	return decision{replica: reps[int(n%uint64(len(reps)))]}
}

// masterTarget waits up to MasterWait for a master this session may use:
// this node with a valid lease (checked against the lease deadline now),
// or, for a client (not a hop), the master's MariaDB under a read window
// or another node's proxy. The usual case (a usable view) costs one view
// load and one clock read; only a wait sets up the deadline and timer.
func (s *session) masterTarget() (string, uint32, routeKind, *wire.Error) {
	if addr, node, kind, ok := s.masterIn(s.srv.topo.View(), time.Now()); ok {
		return addr, node, kind, nil
	}
	return s.masterWait()
}

// masterIn is the master target view v allows at now, if any: its
// address and the member there (whose certificate TLS wants: poolKey.node).
func (s *session) masterIn(v topology.View, now time.Time) (string, uint32, routeKind, bool) {
	switch {
	case v.IsMaster:
		if v.LeaseValid(now) {
			addr := v.MasterMySQLAddr
			if addr == "" {
				addr = v.SelfMySQLAddr
			}
			return addr, s.srv.topo.Self(), routeMaster, true
		}
	case !s.hop && v.WindowValid(now) && !s.stayForwarding(v):
		return v.Window.MySQLAddr, v.Window.MasterID, routeDirect, true
	case !s.hop && v.MasterID != 0 && v.MasterID != s.srv.topo.Self() && v.MasterProxyAddr != "":
		return v.MasterProxyAddr, v.MasterID, routeForward, true
	}
	return "", 0, 0, false
}

// masterWait waits for a view with a master target (masterTarget).
func (s *session) masterWait() (string, uint32, routeKind, *wire.Error) {
	topo := s.srv.topo
	wait := s.srv.rules().MasterWait
	deadline := time.Now().Add(wait)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		ch := topo.Changed()
		now := time.Now()
		if addr, node, kind, ok := s.masterIn(topo.View(), now); ok {
			return addr, node, kind, nil
		}
		if deadline.Sub(now) <= 0 {
			return "", 0, 0, errNoMaster
		}
		select {
		case <-ch:
		case <-timer.C:
			return "", 0, 0, errNoMaster
		case <-s.ctx().Done():
			return "", 0, 0, errNoMaster
		}
	}
}

// acquire returns a backend for d with the session's state applied. For
// the master on this node it re-checks the lease right before returning,
// so the caller sends at once. On a master change inside a transaction
// the old connection is closed (the transaction rolls back) and the
// client gets errTxAborted.
func (s *session) acquire(d decision) (*backend, routeKind, *wire.Error) {
	for attempt := 0; ; attempt++ {
		addr, node, kind := d.replica.MySQLAddr, d.replica.ID, routeReplica
		if d.master {
			var werr *wire.Error
			if addr, node, kind, werr = s.masterTarget(); werr != nil {
				return nil, 0, werr
			}
		}
		b := s.takeHeld()
		if b != nil && (b.key.addr != addr || b.key.node != node) {
			// The route moved: an open transaction (or unreplayable
			// state) is never half-applied on the new one (txstate.go).
			a := s.step(txEvent{kind: evMoved})
			if a.has(actClose) {
				b.close()
			} else {
				s.srv.pool.put(b)
			}
			if a.has(actTxLost) {
				return nil, 0, errTxAborted
			}
			b = nil
		}
		if b == nil {
			var werr *wire.Error
			b, werr = s.connect(addr, node, kind)
			if werr != nil {
				if werr == errBackend && !d.master && attempt == 0 {
					d = decision{master: true} // replica unreachable: the master serves
					continue
				}
				return nil, 0, werr
			}
		}
		if kind == routeReplica {
			ok, err := s.causalReady(b)
			if err != nil {
				b.close()
			} else if !ok {
				s.srv.pool.put(b)
			}
			if err != nil || !ok {
				d = decision{master: true} // the replica lags the session's writes
				continue
			}
		}
		// The pool key has no route kind: one MariaDB is a replica's
		// for a read and the master's (routeMaster, routeDirect) for a
		// write, so a connection takes the kind of the route it serves
		// now. The check above relies on it once a transaction starts.
		b.kind = kind
		s.using = b
		if !s.mayStillSend(kind) {
			s.keep(b) // lease or window ran out meanwhile: wait for the next view
			if attempt < 3 {
				continue
			}
			return nil, 0, errNoMaster
		}
		return b, kind, nil
	}
}

// connect takes a pooled connection or dials one, then syncs state.
// node is the member at addr (poolKey.node).
func (s *session) connect(addr string, node uint32, kind routeKind) (*backend, *wire.Error) {
	key := poolKey{addr: addr, node: node, user: s.user, stage1: s.stage1, caps: s.caps, charset: s.charset}
	if kind == routeForward {
		key.client = s.client.Addr() // a hop serves one client address: the master judges it
	} else {
		key.origin = originFor(s.client, s.byAddr) // MariaDB judges it (proxyproto.go)
	}
	dialer := s.srv.dial
	if s.socketOK && kind != routeForward {
		key.socket, dialer = true, s.srv.beDial
	}
	for b := s.srv.pool.get(key); b != nil; b = s.srv.pool.get(key) {
		if time.Since(b.idleAt) > time.Second {
			if res, err := b.exec(wire.ComPing, nil, s.caps); err != nil || res.Err != nil {
				b.close()
				continue
			}
		}
		if werr, err := s.sync(b); err != nil {
			b.close()
			continue
		} else if werr != nil {
			s.srv.pool.put(b)
			return nil, werr
		}
		return b, nil
	}
	ctx := s.ctx()
	b, werr, err := dial(ctx, dialer, key, kind, s.db, s.srv.cfg.DialTimeout, s.srv.cfg.PeerTimeout, s.srv.cfg.PeerTLS, s.srv.cfg.MySQLTLS, true)
	if refused := (*errHeaderRefused)(nil); errors.As(err, &refused) {
		b, werr, err = s.withoutHeader(ctx, dialer, key, kind, refused)
	}
	if err != nil {
		s.srv.log.Warn("sqlproxy: backend dial failed", "addr", addr, "err", err)
		s.srv.metrics.errors.WithLabelValues("dial").Inc()
		return nil, errBackend
	}
	if werr != nil {
		return nil, werr
	}
	if kind != routeForward { // a hop's login OK is the other proxy's, not MariaDB's
		s.srv.freshMode.Store(uint32(classify.ModeOfStatus(b.loginStatus&wire.StatusNoBackslashEsc != 0)))
	}
	b.owner = s
	if werr, err := s.sync(b); err != nil {
		b.close()
		return nil, errBackend
	} else if werr != nil {
		b.close()
		return nil, werr
	}
	return b, nil
}

// sync applies the session's state (database, SETs) to b; prepared
// statements are re-prepared lazily on first use.
func (s *session) sync(b *backend) (*wire.Error, error) {
	if b.owner == s {
		s.closeStale(b)
		if b.gen == s.stateGen {
			return nil, nil
		}
	}
	if b.owner != s {
		if res, err := b.exec(wire.ComResetConnection, nil, s.caps); err != nil {
			return nil, err
		} else if res.Err != nil {
			return res.Err, nil
		}
		clear(b.stmts)
		b.closes = s.closes
		b.owner = s
		b.db = "" // unknown after reset: set it again below
	}
	if s.db != "" && b.db != s.db {
		res, err := b.exec(wire.ComInitDB, []byte(s.db), s.caps)
		if err != nil {
			return nil, err
		}
		if res.Err != nil {
			return res.Err, nil
		}
		b.db = s.db
	}
	if b.gen != s.stateGen {
		for _, set := range s.sets {
			if werr, err := s.replay(b, set); werr != nil || err != nil {
				return werr, err
			}
		}
		if s.nextTx != nil {
			if werr, err := s.replay(b, s.nextTx); werr != nil || err != nil {
				return werr, err
			}
		}
	}
	b.gen = s.stateGen
	return nil, nil
}

// replay runs one recorded command (a SET) on b.
func (s *session) replay(b *backend, pkt []byte) (*wire.Error, error) {
	res, err := b.exec(pkt[0], pkt[1:], s.caps)
	if err != nil {
		return nil, err
	}
	return res.Err, nil
}

// connectMaster opens the master connection at login.
func (s *session) connectMaster() (*wire.Error, error) {
	b, _, werr := s.acquire(decision{master: true})
	if werr != nil {
		if werr == errNoMaster && s.mode != Linearizable && !s.hop {
			return nil, nil // reads may still be served by replicas
		}
		return werr, nil
	}
	b.gen = s.stateGen
	s.release(b)
	return nil, nil
}

// takeHeld removes and returns the held backend (stopping its hold timer).
func (s *session) takeHeld() *backend {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.held
	s.held, s.armed = nil, false // a pending timer finds nothing armed
	return b
}

func (s *session) peekHeld() *backend {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held
}

func (s *session) dropHeld(b *backend) {
	s.mu.Lock()
	if s.held == b {
		s.held = nil
	}
	s.mu.Unlock()
}

// keep holds b without a timer (transaction, pinned state, cursor).
func (s *session) keep(b *backend) {
	s.mu.Lock()
	s.held, s.armed = b, false
	s.mu.Unlock()
}

// release holds b for the hold window, then gives it to the pool; while
// in a transaction or pinned the session keeps it.
func (s *session) release(b *backend) {
	if s.step(txEvent{kind: evRelease}).has(actKeep) {
		s.keep(b)
		return
	}
	hold := s.srv.rules().Hold
	if hold <= 0 {
		s.srv.pool.put(b)
		return
	}
	now := time.Now()
	s.mu.Lock()
	s.held, s.armed = b, true
	s.holdUntil = now.Add(hold)
	// One timer per session, not one reset per statement: a pending
	// timer that fires early re-arms itself for the rest of the hold.
	if !s.timerPending {
		s.timerPending = true
		if s.holdTimer == nil {
			s.holdTimer = time.AfterFunc(hold, s.holdExpired)
		} else {
			s.holdTimer.Reset(hold)
		}
	}
	s.mu.Unlock()
}

// holdExpired runs on the timer. If the session took or kept the
// backend since, nothing is armed; if the hold was extended, the timer
// re-arms for the remainder; otherwise the backend goes to the pool.
func (s *session) holdExpired() {
	s.mu.Lock()
	s.timerPending = false
	if !s.armed {
		s.mu.Unlock()
		return
	}
	if left := time.Until(s.holdUntil); left > 0 {
		s.timerPending = true
		s.holdTimer.Reset(left)
		s.mu.Unlock()
		return
	}
	b := s.held
	s.held, s.armed = nil, false
	s.mu.Unlock()
	if b != nil {
		s.srv.pool.put(b)
	}
}
