package node

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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
// material m (nil: plain): DialOptionTo any node.
func DialOption(m *mtls.Material) grpc.DialOption { return DialOptionTo(m, 0) }

// DialOptionTo is the transport credential for dialling binlogd id with
// material m (nil: plain). The server name is the dialled host, so a
// peer's certificate needs a SAN for the host of its grpc_addr, and the
// server must be a binlogd: node id's certificate, or any node's if id
// is 0 (mtls.ExpectNode).
func DialOptionTo(m *mtls.Material, id uint32) grpc.DialOption {
	if m == nil {
		return grpc.WithTransportCredentials(insecure.NewCredentials())
	}
	return grpc.WithTransportCredentials(m.ClientCredentials(mtls.ExpectNode(id)))
}

func (n *Node) logLinkSecurity() {
	if n.tls == nil {
		n.warnInsecure()
		return
	}
	n.log.Info("binlogd gRPC links use mutual TLS", "cert", n.cfg.TLSCert, "identity", n.tls.Identity.String(),
		"expires", n.tls.Leaf.NotAfter, "ca", n.cfg.TLSCA)
}

// insecureWarnEvery: without TLS the warning repeats, so it is in every
// log window someone looks at, not only at start.
const insecureWarnEvery = time.Minute

func (n *Node) warnInsecure() {
	n.log.Warn("INSECURE: binlogd gRPC links run without TLS (\"insecure_no_tls\": true): anyone who can reach grpc_addr can vote in Paxos as any node, switch the master over and change the members; set tls_cert, tls_key and tls_ca (`binlogd init` issues them)",
		"grpc_addr", n.cfg.Self().GRPCAddr)
}

// warnInsecureLoop repeats warnInsecure while the node runs without TLS.
func (n *Node) warnInsecureLoop(ctx context.Context) {
	if n.tls != nil {
		return
	}
	every(ctx, insecureWarnEvery, n.warnInsecure)
}

// serverOptions and dialOptionTo are ServerOptions and DialOption with
// handshake failures logged: a peer with a wrong certificate otherwise
// shows only as a Paxos stream that keeps breaking.
//
// With TLS, every call is also authorised by the identity in the client's
// certificate (authz.go); m's registry gets the refusal counters.
func (n *Node) serverOptions() []grpc.ServerOption {
	var reg prometheus.Registerer
	if n.m != nil {
		reg = n.m.reg
		insecure := 0.0
		if n.tls == nil {
			insecure = 1
		}
		g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "phxgo", Subsystem: "binlogd", Name: "insecure_no_tls",
			Help: "1 while this node's gRPC links run without TLS (insecure_no_tls): anyone who reaches grpc_addr can control the cluster"})
		g.Set(insecure)
		reg.MustRegister(g)
	}
	if n.tls == nil {
		return nil
	}
	a := newAuthorizer(n.log, reg)
	a.removed = n.px.Removed
	a.member = n.hasMember
	return []grpc.ServerOption{
		grpc.Creds(establishOnHandshake{newLoggedCreds(n.reloadable(), n.log)}), // rpcguard.go: a finished handshake cannot be evicted
		grpc.ChainUnaryInterceptor(a.unary),
		grpc.ChainStreamInterceptor(a.stream),
	}
}

// dialOptionTo is dialOption for a link to member id: the server must
// present node id's certificate (mtls.ExpectNode), not merely one of the
// cluster CA for the host dialled, so a proxy's key on that host, or
// another node's, cannot take Paxos messages or Admin calls meant for id.
// Learners and witnesses are members with node certificates too.
func (n *Node) dialOptionTo(id uint32) grpc.DialOption {
	if n.tls == nil {
		return DialOption(nil)
	}
	n.tlsCur.CompareAndSwap(nil, mtls.NewReloadable(n.tls))
	return grpc.WithTransportCredentials(newLoggedCreds(n.tlsCur.Load().ClientCredentials(mtls.ExpectNode(id)), n.log))
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

// maxLoggedHosts bounds the hosts loggedCreds remembers: one entry per
// address a stranger's handshake came from made the map grow without
// bound, and each new address wrote a line (audit, December 2026: 5,000
// lines in 5 s from random 127.x.y.z sources).
const maxLoggedHosts = 256

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
	if !quiet && len(c.last) >= maxLoggedHosts {
		for h, at := range c.last {
			if now.Sub(at) >= logEvery {
				delete(c.last, h)
			}
		}
		// Still full: a flood from many addresses. Its lines would say
		// nothing the first ones did not.
		quiet = len(c.last) >= maxLoggedHosts
	}
	if !quiet {
		c.last[host] = now
	}
	c.mu.Unlock()
	if !quiet {
		c.log.Warn(msg, "peer", addr, "err", err)
	}
}
