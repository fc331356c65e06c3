package sqlproxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strings"

	"phxgo/binlogd/mtls"
	"phxgo/sqlproxy/topology"
	"phxgo/sqlproxy/wire"
)

// Who may talk to the proxy, and how the forwarding hop is protected.
//
// Allowed networks (Config.Allow): a client whose address is outside
// every listed network gets MariaDB's own refusal, ERR 1130 "Host '…' is
// not allowed to connect", in place of the greeting, and is closed before
// it can send anything; phxgo_sqlproxy_refused_connections_total{reason=
// "network"} counts them. Other nodes' proxies (the forwarding hop) are
// clients too and must be inside the list.
//
// Hop TLS (Config.PeerTLS): the hop is MySQL protocol on the master's
// client port, so it is wrapped the way MySQL wraps any connection: the
// master's proxy offers CLIENT_SSL in its greeting, the forwarding proxy
// sends an SSLRequest and runs a TLS handshake on the same socket,
// presenting its proxy certificate and checking the master's against the
// CA, the host it dialled and the proxy identity, then logs in inside TLS:
//
//	non-master proxy                         master's proxy
//	 dial ──────────────────────────────────▶ greeting (CLIENT_SSL)
//	 SSLRequest ────────────────────────────▶
//	 TLS handshake (client cert) ◀──────────▶ (cert verified if given)
//	 HandshakeResponse (_phxgo_hop=1) ──────▶ hop without a verified
//	                                          proxy cert: ERR 1045, closed
//
// Ordinary clients need no certificate and may still connect in the
// clear; a client that asks for TLS gets the node certificate. A hop
// that is not over TLS with a CA-signed certificate is refused (metric
// reason "hop_tls").

// DefaultAllow is the allowed-networks default: loopback and the private
// ranges (RFC 1918, IPv6 ULA), where cluster nodes and applications
// usually live; a public address must be listed explicitly.
const DefaultAllow = "127.0.0.0/8,::1/128,10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,fc00::/7"

// ParseAllow parses a comma-separated list of CIDR networks or single
// IPs; "all" allows every address.
func ParseAllow(s string) ([]*net.IPNet, error) {
	if strings.TrimSpace(s) == "all" {
		s = "0.0.0.0/0,::/0"
	}
	var out []*net.IPNet
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !strings.Contains(f, "/") {
			ip := net.ParseIP(f)
			if ip == nil {
				return nil, fmt.Errorf("%w: allow: %q is not an IP or CIDR network", ErrConfig, f)
			}
			bits := 128
			if ip.To4() != nil {
				ip, bits = ip.To4(), 32
			}
			out = append(out, &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)})
			continue
		}
		_, n, err := net.ParseCIDR(f)
		if err != nil {
			return nil, fmt.Errorf("%w: allow: %q: %v", ErrConfig, f, err)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: allow: empty list (use \"all\" to allow every address)", ErrConfig)
	}
	return out, nil
}

func mustParseAllow(s string) []*net.IPNet {
	n, err := ParseAllow(s)
	if err != nil {
		panic(err)
	}
	return n
}

// allowed reports whether a client at addr may connect. Non-IP addresses
// (unix sockets, test pipes) are allowed.
func (s *Server) allowed(addr net.Addr) (string, bool) {
	ta, ok := addr.(*net.TCPAddr)
	if !ok {
		return addr.String(), true
	}
	for _, n := range s.cfg.Allow {
		if n.Contains(ta.IP) {
			return ta.IP.String(), true
		}
	}
	return ta.IP.String(), false
}

// refuseHost sends MariaDB's 1130 in place of the greeting.
func (s *Server) refuseHost(nc net.Conn, host string) {
	s.metrics.refused.WithLabelValues("network").Inc()
	s.log.Info("sqlproxy: refused a client outside the allowed networks", "remote", nc.RemoteAddr().String())
	c := wire.NewConn(nc)
	_ = c.WriteFlush(wire.PreHandshakeError(1130, fmt.Sprintf("Host '%s' is not allowed to connect to this MariaDB server", host)))
}

// errHopNeedsTLS refuses a hop that did not come over TLS with a peer
// certificate while Config.PeerTLS is set.
var errHopNeedsTLS = &wire.Error{Code: 1045, SQLState: "28000",
	Message: "phxgo: a forwarding hop from another proxy must use TLS with a certificate of the cluster CA issued to a proxy (phxgo://proxy/N; sqlproxy -tls-cert/-tls-key/-tls-ca on every node)"}

// bufConn reads through the bufio.Reader that already holds whatever the
// peer sent after its SSLRequest (the start of its TLS handshake).
type bufConn struct {
	net.Conn
	r *bufio.Reader
	w io.Writer
}

// newBufConn is the socket under c for a TLS session: reads drain c's
// buffer first, writes take c's raw path (wire.Conn.Socket) rather than
// the net package's, which wakes the runtime's sysmon per record
// (package rawnet).
func newBufConn(c *wire.Conn) bufConn { return bufConn{c.Conn, c.R, c.Socket()} }

func (c bufConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c bufConn) Write(p []byte) (int, error) { return c.w.Write(p) }

// NetConn lets wire reach the socket under a TLS hop (wire.bearStall).
func (c bufConn) NetConn() net.Conn { return c.Conn }

// startServerTLS upgrades a client connection after its SSLRequest and
// returns the new framed Conn (sequence number carried on) and whether
// the client may forward as a hop: it presented a certificate the CA
// signed for a proxy identity (phxgo://proxy/N; a node's or the admin's
// certificate does not make a hop).
func startServerTLS(ctx context.Context, cl *wire.Conn, cfg *tls.Config) (*wire.Conn, uint32, error) {
	tc := tls.Server(newBufConn(cl), cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, 0, fmt.Errorf("TLS handshake with %s: %w", cl.Conn.RemoteAddr(), err)
	}
	nc := wire.NewConn(tc)
	nc.Seq = cl.Seq
	return nc, proxyPeerID(tc.ConnectionState()), nil
}

// proxyPeerID is N of a verified phxgo://proxy/N peer certificate, 0 for
// any other peer.
func proxyPeerID(st tls.ConnectionState) uint32 {
	if !isProxyPeer(st) {
		return 0
	}
	id, _ := mtls.IdentityOf(st.VerifiedChains[0][0])
	return id.ID
}

// memberProxy reports whether proxy id belongs to a member node of v
// (the master or a replica, this node included): a removed node's proxy
// certificate, or one of an id never added, makes no hop (red-team test,
// session 38: it could claim any client address and so spend any
// address's budget of failed logins, or guess passwords unbounded).
func memberProxy(v topology.View, self, id uint32) bool {
	if id == 0 {
		return false
	}
	if id == v.MasterID || id == self {
		return true
	}
	for _, r := range v.Replicas {
		if r.ID == id {
			return true
		}
	}
	return false
}

// isProxyPeer: the handshake verified a peer certificate of the CA that
// names a proxy.
func isProxyPeer(st tls.ConnectionState) bool {
	if !mtls.PeerVerified(st) {
		return false
	}
	id, err := mtls.IdentityOf(st.VerifiedChains[0][0])
	return err == nil && id.Role == mtls.RoleProxy
}

// startClientTLS is the forwarding side: after the greeting it sends an
// SSLRequest and runs the TLS handshake against the master's proxy at
// addr, checking its certificate for addr's host and that it is proxy
// master's (the master node's id from the view): another certificate for
// that host, a node's or another proxy's, does not pass.
func startClientTLS(ctx context.Context, c *wire.Conn, m *TLS, addr string, master uint32, g *wire.Greeting, caps uint32, charset uint8) (*wire.Conn, error) {
	if g.Caps&wire.ClientSSL == 0 {
		return nil, fmt.Errorf("master's proxy %s does not offer TLS: start it with -tls-cert/-tls-key/-tls-ca too", addr)
	}
	if err := c.WriteFlush(wire.SSLRequest(caps, 1<<30, charset)); err != nil {
		return nil, err
	}
	tc := tls.Client(newBufConn(c), m.ClientFor(addr, mtls.ExpectProxy(master)))
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, fmt.Errorf("TLS handshake with the master's proxy %s: %w", addr, err)
	}
	nc := wire.NewConn(tc)
	nc.Seq = c.Seq
	return nc, nil
}
