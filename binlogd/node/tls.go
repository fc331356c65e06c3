package node

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"phxgo/binlogd/mtls"
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

// serverOptions and dialOption are ServerOptions and DialOption with
// handshake failures logged: a peer with a wrong certificate otherwise
// shows only as a Paxos stream that keeps breaking.
func (n *Node) serverOptions() []grpc.ServerOption {
	if n.tls == nil {
		return nil
	}
	return []grpc.ServerOption{grpc.Creds(newLoggedCreds(credentials.NewTLS(n.tls.Server()), n.log))}
}

func (n *Node) dialOption() grpc.DialOption {
	if n.tls == nil {
		return DialOption(nil)
	}
	return grpc.WithTransportCredentials(newLoggedCreds(credentials.NewTLS(n.tls.Client("")), n.log))
}

// loggedCreds logs failed TLS handshakes, at most once per peer host per
// logEvery (Paxos redials every 500 ms).
type loggedCreds struct {
	credentials.TransportCredentials
	log *slog.Logger

	mu   sync.Mutex
	last map[string]time.Time
}

const logEvery = 30 * time.Second

func newLoggedCreds(c credentials.TransportCredentials, log *slog.Logger) *loggedCreds {
	return &loggedCreds{TransportCredentials: c, log: log, last: map[string]time.Time{}}
}

func (c *loggedCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ClientHandshake(ctx, authority, raw)
	if err != nil && ctx.Err() == nil {
		c.warn("TLS handshake with a peer failed: check its certificate and tls_ca", raw.RemoteAddr().String(), err)
	}
	return conn, info, err
}

func (c *loggedCreds) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ServerHandshake(raw)
	if err != nil {
		c.warn("refused a connection: no TLS or no certificate of the cluster CA", raw.RemoteAddr().String(), err)
	}
	return conn, info, err
}

func (c *loggedCreds) Clone() credentials.TransportCredentials {
	return newLoggedCreds(c.TransportCredentials.Clone(), c.log)
}

func (c *loggedCreds) warn(msg, addr string, err error) {
	host, _, splitErr := net.SplitHostPort(addr)
	if splitErr != nil {
		host = addr
	}
	now := time.Now()
	c.mu.Lock()
	quiet := now.Sub(c.last[host]) < logEvery
	if !quiet {
		c.last[host] = now
	}
	c.mu.Unlock()
	if !quiet {
		c.log.Warn(msg, "peer", addr, "err", err)
	}
}
