package node

import (
	"google.golang.org/grpc/credentials"

	"phxgo/binlogd/mtls"
)

// Certificate reload (reload.go): the gRPC server and every dial take
// their credentials from an mtls.Reloadable, which looks the current
// material up at each handshake.

// reloadable is this node's TLS credential for both sides; n.tls must be set.
func (n *Node) reloadable() credentials.TransportCredentials {
	n.tlsCur.CompareAndSwap(nil, mtls.NewReloadable(n.tls))
	return n.tlsCur.Load().Credentials()
}

// currentTLS is the material new handshakes use (nil: plain).
func (n *Node) currentTLS() *mtls.Material {
	if r := n.tlsCur.Load(); r != nil {
		return r.Material()
	}
	return n.tls
}
