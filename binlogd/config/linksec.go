package config

import "phxgo/binlogd/mtls"

// Link security is on by default: a node needs tls_cert/tls_key/tls_ca,
// and its certificate must name it (phxgo://node/<id>), or an explicit
// "insecure_no_tls": true. Without TLS anyone who reaches grpc_addr can
// vote in Paxos as any node and hand the master lease away, so running so
// must be a decision written in the config, not a forgotten key.

// validateLinkSecurity checks the tls_* keys and insecure_no_tls together.
func (c *Config) validateLinkSecurity() error {
	m, err := c.TLS()
	if err != nil {
		return err
	}
	switch {
	case m == nil && !c.InsecureNoTLS:
		return c.bad("tls_cert", "not set: binlogd's gRPC links (Paxos, Admin) need mutual TLS; issue certificates "+
			"(`binlogd init`, or scripts/make-test-ca.sh for a trial) and set tls_cert, tls_key and tls_ca, or set "+
			"\"insecure_no_tls\": true to run without (anyone who can reach grpc_addr can then control the cluster)")
	case m != nil && c.InsecureNoTLS:
		return c.bad("insecure_no_tls", "true while tls_cert, tls_key and tls_ca are set: remove one or the other")
	case m != nil:
		want := mtls.Identity{Role: mtls.RoleNode, ID: c.ID}
		if m.Identity != want {
			return c.bad("tls_cert", "%s is the certificate of %s, not of this node (%s, %s): issue one for this node",
				c.TLSCert, m.Identity, want, want.URI())
		}
	}
	return nil
}
