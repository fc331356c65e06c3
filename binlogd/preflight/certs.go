package preflight

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"phxgo/binlogd/config"
	"phxgo/binlogd/mtls"
)

// CheckCerts checks the tls_* files one property at a time, so one run
// names every problem: each file loads, the certificates are valid now
// and not about to expire, the key is the certificate's, the certificate
// chains to the CA for both usages, it names this node
// (phxgo://node/<id>) and covers the hosts peers dial.
func CheckCerts(env *Env) []Result {
	cfg := env.Config
	if cfg == nil {
		return nil
	}
	files := cfg.TLSFiles()
	if !files.Enabled() {
		if cfg.InsecureNoTLS {
			return []Result{warn("tls", fmt.Sprintf("issue certificates (binlogd init; scripts/make-test-ca.sh for a trial), set tls_cert, tls_key and tls_ca in %s and remove insecure_no_tls", env.ConfigPath),
				"insecure_no_tls is set: binlogd's gRPC links are plain and unauthenticated; anyone who reaches grpc_addr can vote in Paxos and move the master lease")}
		}
		return []Result{fail("tls", fmt.Sprintf("set tls_cert, tls_key and tls_ca in %s (or \"insecure_no_tls\": true on a single trusted host)", env.ConfigPath),
			"no tls_* keys: binlogd refuses to start without TLS unless insecure_no_tls is set")}
	}
	reissue := reissueFix(cfg, env.ConfigPath)
	var out []Result
	for _, f := range []struct{ key, path string }{{"tls_cert", files.Cert}, {"tls_key", files.Key}, {"tls_ca", files.CA}} {
		if f.path == "" {
			out = append(out, fail("tls", fmt.Sprintf("set %s in %s (all three tls_* keys or none)", f.key, env.ConfigPath), "%s is not set", f.key))
		}
	}
	if len(out) > 0 {
		return out
	}
	cas, err := readCerts(files.CA)
	if err != nil {
		return append(out, fail("tls_ca", fmt.Sprintf("set tls_ca in %s to the cluster CA's PEM file (ca.crt)", env.ConfigPath), "%s: %v", files.CA, err))
	}
	pool := x509.NewCertPool()
	for _, ca := range cas {
		pool.AddCert(ca)
		out = append(out, judgeValidity("tls_ca", files.CA, ca, env.Now, env.Limits.CertWarn,
			"make a new CA and reissue every node's certificate from it (binlogd init)"))
	}
	chain, err := readCerts(files.Cert)
	if err != nil {
		return append(out, fail("tls_cert", reissue, "%s: %v", files.Cert, err))
	}
	leaf := chain[0]
	out = append(out, judgeValidity("tls_cert", files.Cert, leaf, env.Now, env.Limits.CertWarn, reissue))
	out = append(out, checkKeyPair(files, env.ConfigPath))
	out = append(out, checkChain(files, leaf, chain[1:], pool, env.Now, reissue))
	out = append(out, checkIdentity(cfg, files.Cert, leaf, reissue))
	out = append(out, checkHosts(cfg, files.Cert, leaf, reissue)...)
	return out
}

func readCerts(path string) ([]*x509.Certificate, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []*x509.Certificate
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("bad certificate: %w", err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, mtls.ErrNoCert
	}
	return out, nil
}

func judgeValidity(name, path string, c *x509.Certificate, now time.Time, soon time.Duration, fix string) Result {
	day := func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 MST") }
	switch {
	case now.Before(c.NotBefore):
		return fail(name, "check this host's clock (see time sync), or "+fix, "%s is not valid before %s (now %s)", path, day(c.NotBefore), day(now))
	case now.After(c.NotAfter):
		return fail(name, fix, "%s expired on %s", path, day(c.NotAfter))
	case c.NotAfter.Sub(now) < soon:
		return warn(name, fix, "%s expires on %s, in %d days", path, day(c.NotAfter), int(c.NotAfter.Sub(now).Hours()/24))
	}
	return ok(name, "%s (%s) valid until %s", path, c.Subject.CommonName, day(c.NotAfter))
}

func checkKeyPair(f mtls.Files, cfgPath string) Result {
	const name = "tls_key"
	certPEM, err1 := os.ReadFile(f.Cert)
	keyPEM, err2 := os.ReadFile(f.Key)
	if err := errors.Join(err1, err2); err != nil {
		return fail(name, fmt.Sprintf("set tls_key in %s to the certificate's key file", cfgPath), "%v", err)
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return fail(name, fmt.Sprintf("set tls_key in %s to the key issued with %s (e.g. %s)", cfgPath, f.Cert, siblingKey(f.Cert)),
			"%s is not the key of %s: %v", f.Key, f.Cert, err)
	}
	return ok(name, "%s is the key of %s", f.Key, f.Cert)
}

func siblingKey(cert string) string {
	return cert[:len(cert)-len(filepath.Ext(cert))] + ".key"
}

func checkChain(f mtls.Files, leaf *x509.Certificate, rest []*x509.Certificate, pool *x509.CertPool, now time.Time, fix string) Result {
	const name = "tls chain"
	inter := x509.NewCertPool()
	for _, c := range rest {
		inter.AddCert(c)
	}
	for _, u := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		_, err := leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{u}})
		if err != nil {
			usage := map[x509.ExtKeyUsage]string{x509.ExtKeyUsageServerAuth: "serverAuth", x509.ExtKeyUsageClientAuth: "clientAuth"}[u]
			return fail(name, fix, "%s is not accepted by the CA %s for %s: %v", f.Cert, f.CA, usage, err)
		}
	}
	return ok(name, "%s chains to %s (serverAuth and clientAuth)", f.Cert, f.CA)
}

// checkIdentity: peers authorise by the certificate's phxgo:// URI SAN,
// so it must name this node.
func checkIdentity(cfg *config.Config, path string, leaf *x509.Certificate, fix string) Result {
	const name = "tls identity"
	want := mtls.Identity{Role: mtls.RoleNode, ID: cfg.ID}
	id, err := mtls.IdentityOf(leaf)
	if err != nil {
		return fail(name, fix, "%s: %v", filepath.Base(path), err)
	}
	if id != want {
		return fail(name, fix, "%s says %s, but this config is node %d (%s): peers would take this node for %s",
			filepath.Base(path), id, cfg.ID, want.URI(), id)
	}
	return ok(name, "%s says %s (%s)", filepath.Base(path), id, id.URI())
}

// checkHosts: peers verify the certificate against the host they dial
// (grpc_addr; the other proxies, proxy_addr).
func checkHosts(cfg *config.Config, path string, leaf *x509.Certificate, fix string) []Result {
	self := cfg.Self()
	var out []Result
	for _, a := range []struct{ key, addr string }{{"grpc_addr", self.GRPCAddr}, {"proxy_addr", self.ProxyAddr}} {
		host, _, err := net.SplitHostPort(a.addr)
		if err != nil || host == "" {
			continue
		}
		name := "tls host " + a.key
		if err := leaf.VerifyHostname(host); err != nil {
			out = append(out, fail(name, fix+" (with "+host+" among its hosts)", "%s has no SAN for %s (members[].%s %s): peers dialling it refuse the handshake", filepath.Base(path), host, a.key, a.addr))
			continue
		}
		out = append(out, ok(name, "%s covers %s", filepath.Base(path), host))
	}
	return out
}

// reissueFix says how to get this node a right certificate: point the
// keys at its files when they sit next to the configured ones, else
// issue them.
func reissueFix(cfg *config.Config, cfgPath string) string {
	dir := filepath.Dir(cfg.TLSCert)
	f := mtls.DirFiles(dir, mtls.Identity{Role: mtls.RoleNode, ID: cfg.ID})
	if f.Cert != cfg.TLSCert {
		if _, err := os.Stat(f.Cert); err == nil {
			return fmt.Sprintf("set \"tls_cert\": %q and \"tls_key\": %q in %s", f.Cert, f.Key, cfgPath)
		}
	}
	return fmt.Sprintf("issue node %d's certificate from the cluster CA (phxgo://node/%d in its SANs; binlogd init writes a cluster's, scripts/make-test-ca.sh a trial one) and set tls_cert/tls_key in %s", cfg.ID, cfg.ID, cfgPath)
}
