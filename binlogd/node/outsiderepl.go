package node

import (
	"crypto/tls"

	"phxgo/binlogd/replserver"
)

// outsideReplicas sets the replication endpoint's outside replicas'
// account (credentials repl_user, README "Outside replicas") and, when
// this node runs with TLS, the endpoint's TLS: the node's certificate,
// looked up at each handshake so a reload (reload.go) reaches new
// replica connections too. A client certificate is not asked for (an
// outside MariaDB has none of the cluster's); one that is given must
// chain to the CA. The node's own MariaDB keeps replicating in plain
// over loopback with the capture account, as before.
//
// It also registers the endpoint's metrics (metrics_repl.go), read from
// n.repl once it is set.
func (n *Node) outsideReplicas(rcfg *replserver.Config) {
	if n.m != nil && n.m.reg != nil {
		if err := n.m.reg.Register(newReplCollector(n)); err != nil {
			n.log.Warn("replication endpoint metrics not registered", "err", err)
		}
	}
	rcfg.ReplUser, rcfg.ReplPassword = n.cred.ReplUser, n.cred.ReplPassword
	if n.tls == nil {
		return
	}
	rcfg.TLS = &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return n.currentTLS().ServerOptionalClient(), nil
		},
	}
}
