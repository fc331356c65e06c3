package sqlproxy

import (
	"time"

	"phxgo/sqlproxy/topology"
)

// One hop under a read window (doc.go, "One hop"): while the master has
// lent this proxy a window (topology.Window, renewed by topology.Admin),
// statements for the master go straight to its MariaDB (routeDirect)
// instead of through the master's proxy (routeForward).

// stayForwarding keeps a session that holds a forwarded connection inside
// a transaction (or with unreplayable state) on it: moving it to the
// direct route would roll the transaction back for nothing.
func (s *session) stayForwarding(v topology.View) bool {
	if !s.inTx && !s.pinned {
		return false
	}
	b := s.peekHeld()
	return b != nil && b.kind == routeForward && b.key.addr == v.MasterProxyAddr
}

// mayStillSend re-checks, right before the send, what allowed the route:
// this node's own lease (routeMaster) or the window (routeDirect). A
// forwarded statement is judged by the master's proxy; a replica read
// needs no lease.
func (s *session) mayStillSend(kind routeKind) bool {
	switch kind {
	case routeMaster:
		return s.srv.topo.View().LeaseValid(time.Now())
	case routeDirect:
		return s.srv.topo.View().WindowValid(time.Now())
	}
	return true
}
