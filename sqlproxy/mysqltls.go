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
	"phxgo/sqlproxy/wire"
)

// TLS to MariaDB (Config.MySQLTLS): every connection the proxy opens to
// a MariaDB over TCP — session backends (a replica's reads, the master's
// MariaDB under a read window or on the master's own node), health
// checks and the mysql.user reads — runs in TLS, as the MySQL protocol
// does it (the server's greeting offers CLIENT_SSL, the client sends an
// SSLRequest and the handshake runs on the same socket before the
// login). The server's certificate must chain to the cluster CA, name
// the host dialled and be a node's (phxgo://node/N: binlogd gives
// MariaDB its node certificate, binlogd/mysqld/tls.go). A MariaDB that
// does not offer TLS is refused, not used in the clear: that would let
// anyone in the path strip it. This node's MariaDB over its unix socket
// (Config.MySQLSocket) needs no TLS.
//
// The proxy presents no certificate to MariaDB: accounts log in with
// their passwords, inside TLS.

// errMySQLNoTLS: a MariaDB reached over TCP did not offer TLS.
var errMySQLNoTLS = errors.New("MariaDB does not offer TLS (its binlogd runs without tls_*, or an older binlogd started it: restart that MariaDB), and this proxy speaks to MariaDB over TCP only in TLS")

// MySQLClientTLS is the client configuration for a MariaDB at host,
// verified against the material t holds at each handshake (so a reload
// of the CA applies to new connections; crypto/tls keeps a Config).
// For go-sql-driver's Config.TLS as well as the proxy's own handshake.
func MySQLClientTLS(t *TLS, host string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		ServerName: host,
		// The chain is verified below, against the pool in force now:
		// crypto/tls would use a RootCAs fixed when this Config was made.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			return verifyMySQLCert(t.Material().Pool, host, cs.PeerCertificates)
		},
	}
}

// verifyMySQLCert checks a MariaDB's certificate chain: from the CA, for
// serverAuth, naming host, issued to a node.
func verifyMySQLCert(pool *x509.CertPool, host string, certs []*x509.Certificate) error {
	if len(certs) == 0 {
		return fmt.Errorf("MariaDB at %s presented no certificate", host)
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	leaf := certs[0]
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, DNSName: host,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return fmt.Errorf("MariaDB at %s: certificate not accepted: %w", host, err)
	}
	id, err := mtls.IdentityOf(leaf)
	if err != nil || id.Role != mtls.RoleNode {
		return fmt.Errorf("MariaDB at %s presented the certificate of %v, not a node's (want phxgo://node/N)", host, id)
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
func startMySQLTLS(ctx context.Context, c *wire.Conn, t *TLS, addr string, g *wire.Greeting, caps uint32, charset uint8) (*wire.Conn, error) {
	if g.Caps&wire.ClientSSL == 0 {
		return nil, fmt.Errorf("backend %s: %w", addr, errMySQLNoTLS)
	}
	if err := c.WriteFlush(wire.SSLRequest(caps, 1<<30, charset)); err != nil {
		return nil, err
	}
	bc := newBufConn(c)
	sn := &sniffReader{r: bc.r}
	tc := tls.Client(sniffConn{bc, sn}, MySQLClientTLS(t, HostOf(addr)))
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
