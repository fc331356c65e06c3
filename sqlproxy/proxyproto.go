package sqlproxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"phxgo/sqlproxy/auth"
	"phxgo/sqlproxy/wire"
)

// PROXY protocol: which account MariaDB applies to a client's login.
//
// The proxy judges a client by the mysql.user row matching the client's
// real address (package auth), then logs in to MariaDB as that user over
// its own connection. Without more, MariaDB matches the row by the
// proxy's address, not the client's: with hv@'%' (SELECT) and
// hv@'127.0.0.1' (ALL) a client from elsewhere could DELETE through a
// proxy reaching MariaDB by TCP from 127.0.0.1. So every backend
// connection to a MariaDB over TCP opened for a client starts with a
// PROXY protocol v2 header (wire.ProxyHeaderIP) naming the client, which
// MariaDB 10.3+ accepts from its proxy_protocol_networks (binlogd sets
// them: the members' addresses, not localhost; binlogd/node/proxynets.go)
// and then matches accounts by:
//
//	client ──▶ proxy ── TCP: [PROXY v2 header: client's address] greeting… login ──▶ MariaDB
//	                     │                                  matches user@<client>, as the proxy did
//	                     └ unix socket: no header (only when localhost's row is the client's)
//
// What MariaDB 10.11 does (checked against the real server, TestProxyProtocol*):
//   - The header may come right after connect or in front of the first
//     packet (it reads it with that packet, after sending the greeting);
//     the proxy sends it in the same write as its first packet (the login,
//     or the SSLRequest of a TLS login): sent alone at connect, a refused
//     header makes MariaDB reset the connection before any ERR is read.
//   - From an address outside the list it answers that first packet with
//     ERR 1130 "Proxy header is not accepted from <addr>" and closes; a
//     connection without a header is still accepted from anywhere.
//   - Over TCP (skip-name-resolve) the header's address is matched like a
//     client's: a loopback address does not match 'localhost' rows. The
//     AF_UNIX form makes the login 'localhost' (and no address row), as a
//     login by the unix socket.
//   - Over the unix socket a header does NOT undo 'localhost': rows for
//     localhost still match whatever address the header names (lo@localhost
//     logs in claiming 10.1.2.3). So the socket stays what it was: used
//     only when localhost's row is the client's (auth.Account.SameLocally),
//     and no header is sent there.
//
// Which header (originFor): the client's address, except for a loopback
// client whose row matches it only as 'localhost' (the proxy's auth lets
// a loopback address match 'localhost', MariaDB over TCP does not): that
// client is sent in the AF_UNIX form. Either way MariaDB's first matching
// row is the proxy's: the proxy's row is first among all the rows the
// client matches, so it is first among the subset MariaDB considers (the
// rows matching the address, or those matching 'localhost'), and it is
// in that subset.
//
// A MariaDB that refuses the header (its binlogd is older, or the proxy
// dials from an address outside the list): the login without a header
// would get the row of the proxy's own address. The proxy logs in again
// without the header only when that row is the client's row (asked of
// the authenticator, auth.Store.AccountFor, judged by address as MariaDB
// does); otherwise the client gets 1045 and the proxy logs why. Never a
// login that could grant more than the client's row (closed by default).
//
// Pooling: the header's client is part of poolKey (origin), so a
// connection opened for one client address never serves another; many
// clients from a few application hosts still share a few keys.
//
// Proxy-internal connections (health checks, mysql.user reads with the
// admin account) send no header: MariaDB judges them by the proxy's own
// address, which is what they are.

// originLocal is the origin of a local client sent in the AF_UNIX form.
const originLocal = "localhost"

// originFor is the client a backend login names in its PROXY header: its
// address when its row matches that address (byAddr, auth.Account.ByAddr),
// else originLocal (a loopback client whose row is a 'localhost' one, or
// a client that reached the proxy by a unix socket).
func originFor(c auth.Client, byAddr bool) string {
	if c.IP == nil || !byAddr {
		return originLocal
	}
	return c.Addr()
}

// proxyHeader encodes origin for a connection to remote.
func proxyHeader(origin string, remote net.Addr) []byte {
	if origin == originLocal {
		return wire.ProxyHeaderLocal()
	}
	var dst net.IP
	port := 0
	if ta, ok := remote.(*net.TCPAddr); ok {
		dst, port = ta.IP, ta.Port
	}
	return wire.ProxyHeaderIP(net.ParseIP(origin), 0, dst, port)
}

// errHeaderRefused: MariaDB at addr answered the login that began with a
// PROXY header with ERR 1130 (the proxy's address local is not in its
// proxy_protocol_networks).
type errHeaderRefused struct {
	addr  string
	local net.IP
	werr  *wire.Error
}

func (e *errHeaderRefused) Error() string {
	return fmt.Sprintf("MariaDB %s refused the PROXY header from %s: %s", e.addr, e.local, e.werr.Message)
}

// accountFinder is an Authenticator that can say which row of a user a
// login from an address gets (auth.Store).
type accountFinder interface {
	AccountFor(ctx context.Context, user string, c auth.Client) (host string, ok bool, err error)
}

// withoutHeader handles a refused header: it logs in again without one
// when MariaDB would then apply the client's own row, and otherwise
// answers 1045. The result is dial's.
func (s *session) withoutHeader(ctx context.Context, dialer DialFunc, key poolKey, kind routeKind, r *errHeaderRefused) (*backend, *wire.Error, error) {
	same, proxyRow := false, ""
	if af, ok := s.srv.auth.(accountFinder); ok && r.local != nil {
		h, found, err := af.AccountFor(ctx, s.user, auth.Client{IP: r.local, ByAddr: true})
		same, proxyRow = err == nil && found && h == s.acctHost, h
	}
	outcome := "denied"
	if same {
		outcome = "fallback"
	}
	s.srv.metrics.headerRefused.WithLabelValues(outcome).Inc()
	if ok, held := s.srv.headerLog.Allow(time.Now()); ok {
		s.srv.log.Warn("sqlproxy: MariaDB refuses the PROXY header; add this proxy's address to its proxy_protocol_networks (binlogd does, from the members' addresses)",
			"addr", r.addr, "from", r.local.String(), "user", s.user, "client_row", s.acctHost, "proxy_row", proxyRow, "outcome", outcome, "unlogged_before", held)
	}
	if !same {
		return nil, &wire.Error{Code: 1045, SQLState: "28000", Message: fmt.Sprintf(
			"Access denied for user '%s'@'%s': phxgo: MariaDB %s does not accept the proxy's PROXY header, and without it would apply another account of this user (see the proxy's log)",
			s.user, s.client.Addr(), key.addr)}, nil
	}
	return dial(ctx, dialer, key, kind, s.db, s.srv.cfg.DialTimeout, s.srv.cfg.PeerTimeout, s.srv.cfg.PeerTLS, s.srv.cfg.MySQLTLS, false)
}

// sniffReader records the first bytes a TLS client reads, so that a
// MariaDB answering the SSLRequest with an ERR packet (a refused PROXY
// header) is told from a broken handshake without parsing messages.
type sniffReader struct {
	r   io.Reader
	buf []byte
}

func (s *sniffReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if room := 64 - len(s.buf); room > 0 {
		s.buf = append(s.buf, p[:min(n, room)]...)
	}
	return n, err
}

// refusal returns the ERR packet the server sent in place of TLS, reading
// what the TLS client did not from r; nil when it is not one. MariaDB
// closes as it refuses, so the TLS client's first write may fail before
// it read anything: the ERR is still in the receive queue then.
func (s *sniffReader) refusal(r *bufio.Reader) *wire.Error {
	if len(s.buf) < 5 {
		more := make([]byte, 5-len(s.buf))
		if _, err := io.ReadFull(r, more); err != nil {
			return nil
		}
		s.buf = append(s.buf, more...)
	}
	if s.buf[4] != wire.HeaderErr {
		return nil
	}
	n := int(s.buf[0]) | int(s.buf[1])<<8 | int(s.buf[2])<<16
	if n < 3 || n > 4096 {
		return nil
	}
	p := append([]byte(nil), s.buf[4:min(len(s.buf), 4+n)]...)
	if rest := n - len(p); rest > 0 {
		more := make([]byte, rest)
		if _, err := io.ReadFull(r, more); err != nil {
			return nil
		}
		p = append(p, more...)
	}
	return wire.ParseError(p)
}

// sniffConn is a bufConn whose reads go through a sniffReader.
type sniffConn struct {
	bufConn
	s *sniffReader
}

func (c sniffConn) Read(p []byte) (int, error) { return c.s.Read(p) }
