package node

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"phxgo/mtls"
)

// mTLS on binlogd's gRPC (config keys tls_cert, tls_key, tls_ca): the
// server requires a client certificate from the cluster CA, and every dial
// to a peer (Paxos streams, Admin calls such as waitCaughtUp) presents
// this node's certificate and checks the peer's against the CA and the
// peer's grpc_addr host. Without the keys everything stays plain.

// ServerOptions are the grpc.ServerOptions for a node with material m
// (nil: plain).
func ServerOptions(m *mtls.Material) []grpc.ServerOption {
	if m == nil {
		return nil
	}
	return []grpc.ServerOption{grpc.Creds(credentials.NewTLS(m.Server()))}
}

// DialOption is the transport credential for dialling a binlogd with
// material m (nil: plain). The server name is the dialled host, so a
// peer's certificate needs a SAN for the host of its grpc_addr.
func DialOption(m *mtls.Material) grpc.DialOption {
	if m == nil {
		return grpc.WithTransportCredentials(insecure.NewCredentials())
	}
	return grpc.WithTransportCredentials(credentials.NewTLS(m.Client("")))
}

func (n *Node) logLinkSecurity() {
	if n.tls == nil {
		n.log.Warn("binlogd gRPC links are unencrypted and unauthenticated (set tls_cert, tls_key and tls_ca for mutual TLS)")
		return
	}
	n.log.Info("binlogd gRPC links use mutual TLS", "cert", n.cfg.TLSCert, "subject", n.tls.Leaf.Subject.String(),
		"expires", n.tls.Leaf.NotAfter, "ca", n.cfg.TLSCA)
}
