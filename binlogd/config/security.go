package config

import (
	"errors"
	"net"
	"time"

	"phxgo/binlogd/mtls"
)

// Security holds the keys of binlogd's network exposure. It is embedded in
// Config, so its keys sit at the top level of the file.
type Security struct {
	// tls_cert, tls_key, tls_ca: PEM files of this node's certificate,
	// its key and the cluster CA. Required (all three) unless
	// insecure_no_tls. Every binlogd gRPC link (Paxos, Admin) and the
	// operator commands use mutual TLS: both sides present a certificate
	// the CA signed, and binlogd authorises each call by the identity in
	// the caller's (binlogd/node/authz.go). The certificate must be this
	// node's (SAN URI phxgo://node/<id>), with serverAuth and clientAuth
	// and a SAN for the host of its grpc_addr (`binlogd init` issues them;
	// scripts/make-test-ca.sh makes test ones).
	TLSCert string `json:"tls_cert,omitempty"`
	TLSKey  string `json:"tls_key,omitempty"`
	TLSCA   string `json:"tls_ca,omitempty"`
	// insecure_no_tls: run the gRPC links without TLS. Without it a config
	// with no tls_* keys is refused (linksec.go).
	InsecureNoTLS bool `json:"insecure_no_tls,omitempty"`
	// allow_remote_repl: let this node's repl_addr be a non-loopback
	// address. The replication endpoint serves the whole binlog to the
	// capture account and only the node's own MariaDB needs it, so by
	// default it must be on loopback; outside replicas on other hosts
	// (credentials repl_user, over TLS) need it reachable.
	AllowRemoteRepl bool `json:"allow_remote_repl,omitempty"`
}

// TLSFiles are the tls_* keys as mtls files.
func (c *Config) TLSFiles() mtls.Files {
	return mtls.Files{Cert: c.TLSCert, Key: c.TLSKey, CA: c.TLSCA}
}

// TLS loads and checks the tls_* files; nil, nil when none is set.
// Errors name the key and the file.
func (c *Config) TLS() (*mtls.Material, error) {
	f := c.TLSFiles()
	if !f.Enabled() {
		return nil, nil
	}
	m, err := mtls.Load(f, time.Now())
	var fe *mtls.FileError
	if errors.As(err, &fe) {
		return nil, c.bad("tls_"+fe.Which, "%v", fe)
	}
	return m, err
}

func (c *Config) resolveSecurity(abs func(string) string) {
	c.TLSCert, c.TLSKey, c.TLSCA = abs(c.TLSCert), abs(c.TLSKey), abs(c.TLSCA)
}

func (c *Config) validateSecurity() error {
	if err := c.validateLinkSecurity(); err != nil {
		return err
	}
	return nil
}

// HTTPListenAddr is where the metrics/health HTTP server listens:
// http_addr, with an empty host meaning loopback (":9100" is
// 127.0.0.1:9100; write 0.0.0.0:9100 to listen everywhere). "" when off.
func (c *Config) HTTPListenAddr() string { return LoopbackIfNoHost(c.HTTPAddr) }

// LoopbackIfNoHost turns ":PORT" into "127.0.0.1:PORT"; other values are
// returned as they are.
func LoopbackIfNoHost(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host != "" {
		return addr
	}
	return net.JoinHostPort("127.0.0.1", port)
}

// isLoopback: addr's host is a loopback IP or "localhost".
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
