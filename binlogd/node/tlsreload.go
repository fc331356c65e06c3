package node

import (
	"context"
	"net"
	"sync/atomic"

	"google.golang.org/grpc/credentials"

	"phxgo/binlogd/mtls"
)

// Certificate reload (reload.go): gRPC takes its TransportCredentials
// once, when the server is built or a connection is dialled, so the
// credentials below look up the current material at every handshake.
// A reload swaps the material; new handshakes (new connections, and
// reconnects) present the new certificate and check peers against the
// new CA pool, while established connections keep the session they
// negotiated.

// tlsNow is the material of the latest successful load.
type tlsNow struct {
	m      *mtls.Material
	server credentials.TransportCredentials
	client credentials.TransportCredentials
}

func newTLSNow(m *mtls.Material) *tlsNow {
	return &tlsNow{m: m, server: credentials.NewTLS(m.Server()), client: credentials.NewTLS(m.Client(""))}
}

// reloadingCreds serves the handshakes of both sides from cur.
type reloadingCreds struct {
	cur *atomic.Pointer[tlsNow]
}

// reloadable is this node's TLS credential for both sides; n.tls must be set.
func (n *Node) reloadable() credentials.TransportCredentials {
	n.tlsCur.CompareAndSwap(nil, newTLSNow(n.tls))
	return reloadingCreds{cur: &n.tlsCur}
}

// currentTLS is the material new handshakes use (nil: plain).
func (n *Node) currentTLS() *mtls.Material {
	if c := n.tlsCur.Load(); c != nil {
		return c.m
	}
	return n.tls
}

func (c reloadingCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return c.cur.Load().client.ClientHandshake(ctx, authority, raw)
}

func (c reloadingCreds) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return c.cur.Load().server.ServerHandshake(raw)
}

func (c reloadingCreds) Info() credentials.ProtocolInfo { return c.cur.Load().server.Info() }

// Clone shares cur: a clone must follow reloads too.
func (c reloadingCreds) Clone() credentials.TransportCredentials { return c }

// OverrideServerName is deprecated in gRPC and unused here: the server
// name comes from the dialled address.
func (c reloadingCreds) OverrideServerName(string) error { return nil }
