package node

import (
	"errors"

	"google.golang.org/grpc/credentials"

	"phxgo/binlogd/mtls"
)

// maxRPCConnsPerIdentity caps the established gRPC connections of one
// identity that is not a node's (a proxy, the operator). A proxy keeps
// one connection to its node, an operator command one for its time.
// Without it, one proxy's certificate took all maxRPCConns slots (2,043
// connections beside the peers' links): every new connection, an
// operator's status or a peer's link after a restart or a network blip,
// was refused at the end of its handshake (red-team test, session 39).
// Nodes are not counted: a node key can vote in Paxos anyway, and a
// cap could cut a peer off.
const maxRPCConnsPerIdentity = 64

var errRPCIdentityCap = errors.New("binlogd: gRPC connections of this identity at their cap")

// nonNode is the identity a finished TLS handshake shows when it is a
// verified one that is not a node's.
func nonNode(info credentials.AuthInfo) (mtls.Identity, bool) {
	ti, ok := info.(credentials.TLSInfo)
	if !ok || len(ti.State.VerifiedChains) == 0 || len(ti.State.VerifiedChains[0]) == 0 {
		return mtls.Identity{}, false
	}
	id, err := mtls.IdentityOf(ti.State.VerifiedChains[0][0])
	if err != nil || id.Role == mtls.RoleNode {
		return mtls.Identity{}, false
	}
	return id, true
}

// claim counts c, established, against its identity's cap, or refuses
// it (errRPCIdentityCap); Close gives it back.
func (c *capConn) claim(info credentials.AuthInfo) error {
	id, ok := nonNode(info)
	if !ok {
		return nil
	}
	l := c.l
	l.mu.Lock()
	defer l.mu.Unlock()
	c.ident = id
	if l.byIdentity[id] >= maxRPCConnsPerIdentity {
		return errRPCIdentityCap
	}
	if l.byIdentity == nil {
		l.byIdentity = map[mtls.Identity]int{}
	}
	l.byIdentity[id]++
	c.claimed = true
	return nil
}

func (l *capListener) unclaimLocked(c *capConn) {
	if !c.claimed {
		return
	}
	c.claimed = false
	if l.byIdentity[c.ident]--; l.byIdentity[c.ident] <= 0 {
		delete(l.byIdentity, c.ident)
	}
}
