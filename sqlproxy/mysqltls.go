package sqlproxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"time"

	"phxgo/binlogd/mtls"
	"phxgo/sqlproxy/topology"
	"phxgo/sqlproxy/wire"
)

// TLS to MariaDB (Config.MySQLTLS): every connection the proxy opens to
// a MariaDB over TCP — session backends (a replica's reads, the master's
// MariaDB under a read window or on the master's own node), health
// checks and the mysql.user reads — runs in TLS, as the MySQL protocol
// does it (the server's greeting offers CLIENT_SSL, the client sends an
// SSLRequest and the handshake runs on the same socket before the
// login). The server's certificate must chain to the cluster CA, name
// the host dialled and be the node's whose MariaDB was meant
// (phxgo://node/N of the member at that address: binlogd gives MariaDB
// its node certificate, binlogd/mysqld/tls.go). A MariaDB that
// does not offer TLS is refused, not used in the clear: that would let
// anyone in the path strip it. This node's MariaDB over its unix socket
// (Config.MySQLSocket) needs no TLS.
//
// The proxy presents no certificate to MariaDB: accounts log in with
// their passwords, inside TLS.

// errMySQLNoTLS: a MariaDB reached over TCP did not offer TLS.
var errMySQLNoTLS = errors.New("MariaDB does not offer TLS (its binlogd runs without tls_*, or an older binlogd started it: restart that MariaDB), and this proxy speaks to MariaDB over TCP only in TLS")

// MySQLClientTLS is the client configuration for the MariaDB at addr,
// verified against the material t holds at each handshake (so a reload
// of the CA applies to new connections; crypto/tls keeps a Config).
// For go-sql-driver's Config.TLS as well as the proxy's own handshake.
//
// The certificate must be node's, the member whose MariaDB sits at addr:
// a chain from the CA naming the host is not enough, since the host's
// other keys (its proxy's, or any node's where certificates carry
// 127.0.0.1) would pass for its MariaDB. node is asked at every
// handshake: a pooled sql.DB (health checks, mysql.user reads) outlives
// the view it was opened in (MySQLNodeAt). Its error refuses the
// handshake.
func MySQLClientTLS(t *TLS, addr string, node func() (uint32, error)) *tls.Config {
	host := HostOf(addr)
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		ServerName: host,
		// The chain is verified below, against the pool in force now:
		// crypto/tls would use a RootCAs fixed when this Config was made.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			id, err := node()
			if err != nil {
				return fmt.Errorf("MariaDB at %s: %w", addr, err)
			}
			return verifyMySQLCert(t.Material().Pool, addr, id, cs.PeerCertificates)
		},
	}
}

// NodeIs is MySQLClientTLS's node for a dial whose member is known (a
// session's backend: its route named the member).
func NodeIs(id uint32) func() (uint32, error) { return func() (uint32, error) { return id, nil } }

// errNoMemberAt: a MariaDB address no member of the current view has.
var errNoMemberAt = errors.New("no member of the current view has this MariaDB address: whose certificate to expect is unknown")

// MySQLNodeAt is MySQLClientTLS's node for the MariaDB at addr, from
// topo's current view: the master's, this node's, a replica's or the
// read window's MariaDB. An address no member has is refused
// (errNoMemberAt).
func MySQLNodeAt(topo topology.Topology, addr string) func() (uint32, error) {
	return func() (uint32, error) {
		if id := mysqlNodeIn(topo.View(), topo.Self(), addr); id != 0 {
			return id, nil
		}
		return 0, errNoMemberAt
	}
}

// mysqlNodeIn is the id of the member whose MariaDB is at addr in v
// (self: this node's id), or 0.
func mysqlNodeIn(v topology.View, self uint32, addr string) uint32 {
	switch {
	case addr == "":
		return 0
	case addr == v.SelfMySQLAddr && self != 0:
		return self
	case addr == v.MasterMySQLAddr && v.MasterID != 0:
		return v.MasterID
	case addr == v.Window.MySQLAddr && v.Window.MasterID != 0:
		return v.Window.MasterID
	}
	for _, r := range v.Replicas {
		if r.MySQLAddr == addr {
			return r.ID
		}
	}
	return 0
}

// verifyMySQLCert checks a MariaDB's certificate chain: from the CA, for
// serverAuth, naming addr's host, issued to node (binlogd gives MariaDB
// its node certificate, binlogd/mysqld/tls.go).
func verifyMySQLCert(pool *x509.CertPool, addr string, node uint32, certs []*x509.Certificate) error {
	if len(certs) == 0 {
		return fmt.Errorf("MariaDB at %s presented no certificate", addr)
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	leaf := certs[0]
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, DNSName: HostOf(addr),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return fmt.Errorf("MariaDB at %s: certificate not accepted: %w", addr, err)
	}
	if err := mtls.ExpectNode(node).Check(addr, leaf); err != nil {
		return fmt.Errorf("MariaDB: %w", err)
	}
	return nil
}

// HostOf is addr's host, or addr when it has no port.
func HostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// startMySQLTLS is startClientTLS for a MariaDB backend: after the
// greeting, an SSLRequest and the handshake verified by MySQLClientTLS.
// A *wire.Error is MariaDB's ERR answered in place of TLS (it refused the
// PROXY header sent before the SSLRequest: proxyproto.go).
func startMySQLTLS(ctx context.Context, c *wire.Conn, t *TLS, addr string, node uint32, g *wire.Greeting, caps uint32, charset uint8) (*wire.Conn, error) {
	if g.Caps&wire.ClientSSL == 0 {
		return nil, fmt.Errorf("backend %s: %w", addr, errMySQLNoTLS)
	}
	if err := c.WriteFlush(wire.SSLRequest(caps, 1<<30, charset)); err != nil {
		return nil, err
	}
	bc := newBufConn(c)
	sn := &sniffReader{r: bc.r}
	tc := tls.Client(sniffConn{bc, sn}, MySQLClientTLS(t, addr, NodeIs(node)))
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = c.SetReadDeadline(time.Now().Add(time.Second)) // dial resets it
		if werr := sn.refusal(c.R); werr != nil {
			return nil, werr // MariaDB's ERR in place of TLS (a refused PROXY header)
		}
		return nil, fmt.Errorf("TLS handshake with MariaDB %s: %w", addr, err)
	}
	nc := wire.NewConn(tc)
	nc.Seq = c.Seq
	return nc, nil
}
