package mtls

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"

	"google.golang.org/grpc/credentials"
)

// Who the other end of a dial must be. The CA and the host name say a
// server belongs to the cluster and sits on the host dialled; they do not
// say which of that host's keys it holds. A proxy's key on a node's host
// (both daemons run as one OS user), or any node's key where certificates
// carry 127.0.0.1 (-listen-any), would otherwise pass for the binlogd or
// the MariaDB a client meant to reach (red-team test, December 2026: the
// admin CLI sent a switchover to, and restored a backup from, a server
// presenting proxy3.crt; node 2 streamed Paxos messages to it). So every
// dial says whom it expects (Expect) and ClientFor's VerifyConnection
// refuses anyone else, after the usual chain and host name checks.

// ErrWrongPeer: the server's certificate chains to the cluster CA but
// names another identity than the dialler expected.
var ErrWrongPeer = errors.New("peer presented the wrong identity")

// Expect is whom a dialler expects at the other end: a role, and the node
// id unless ID is 0 (any holder of the role, for a dial that cannot know
// the id, e.g. the CLI given only an address).
type Expect struct {
	Role Role
	ID   uint32 // 0: any id
}

// ExpectNode is binlogd id (0: any binlogd).
func ExpectNode(id uint32) Expect { return Expect{Role: RoleNode, ID: id} }

// ExpectProxy is sqlproxy id (0: any sqlproxy).
func ExpectProxy(id uint32) Expect { return Expect{Role: RoleProxy, ID: id} }

// String is "node 3", or "any node" for ID 0.
func (e Expect) String() string {
	if e.ID == 0 {
		if e.Role == RoleAdmin {
			return "admin"
		}
		return "any " + string(e.Role)
	}
	return Identity{Role: e.Role, ID: e.ID}.String()
}

// Match reports whether got is who e expects.
func (e Expect) Match(got Identity) bool {
	return got.Role == e.Role && (e.ID == 0 || got.ID == e.ID)
}

// Check is nil if cert names an identity e matches; otherwise an error
// wrapping ErrWrongPeer (or ErrNoIdentity/ErrBadIdentity) that names addr.
func (e Expect) Check(addr string, cert *x509.Certificate) error {
	got, err := IdentityOf(cert)
	if err != nil {
		return fmt.Errorf("peer at %s: %w (want %s)", addr, err, e)
	}
	if !e.Match(got) {
		return fmt.Errorf("%w: peer at %s presented %s, want %s", ErrWrongPeer, addr, got, e)
	}
	return nil
}

// ClientFor is Client for a dial to addr (host:port, or a host) that must
// reach want: the server's certificate must chain to the CA, carry addr's
// host, and name an identity want matches. The server name is addr's host.
func (m *Material) ClientFor(addr string, want Expect) *tls.Config {
	c := m.Client(hostOf(addr))
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		// Runs after crypto/tls verified the chain and the host name
		// (InsecureSkipVerify is never set), so a leaf is there.
		if len(cs.PeerCertificates) == 0 {
			return fmt.Errorf("peer at %s: no certificate (want %s)", addr, want)
		}
		return want.Check(addr, cs.PeerCertificates[0])
	}
	return c
}

// ClientFor is Material.ClientFor from the current material.
func (r *Reloadable) ClientFor(addr string, want Expect) *tls.Config {
	return r.Material().ClientFor(addr, want)
}

// ClientCredentials are gRPC credentials for dials that must reach want:
// each handshake takes the current material (reloads apply to new
// connections and reconnects) and ClientFor's check, with the dialled
// authority as addr. The server side, if used, is as Credentials.
func (r *Reloadable) ClientCredentials(want Expect) credentials.TransportCredentials {
	return expectCreds{material: r.Material, server: r.Credentials(), want: want}
}

// ClientCredentials are the gRPC credentials of a dial with m that must
// reach want (no reloads: the CLI and tools).
func (m *Material) ClientCredentials(want Expect) credentials.TransportCredentials {
	return expectCreds{material: func() *Material { return m }, server: credentials.NewTLS(m.Server()), want: want}
}

type expectCreds struct {
	material func() *Material
	server   credentials.TransportCredentials
	want     Expect
}

func (c expectCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	addr := authority
	if addr == "" && raw.RemoteAddr() != nil {
		addr = raw.RemoteAddr().String()
	}
	// One tls.Config per handshake: it carries the authority for the
	// check and the material in force now. A client config has no
	// session-ticket keys to lose.
	return credentials.NewTLS(c.material().ClientFor(addr, c.want)).ClientHandshake(ctx, authority, raw)
}

func (c expectCreds) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return c.server.ServerHandshake(raw)
}

func (c expectCreds) Info() credentials.ProtocolInfo          { return c.server.Info() }
func (c expectCreds) Clone() credentials.TransportCredentials { return c }
func (c expectCreds) OverrideServerName(string) error         { return nil }

// hostOf is addr's host, or addr itself when it has no port.
func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}
