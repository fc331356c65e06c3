package localcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"phxgo/binlogd/config"
	"phxgo/binlogd/mtls"
)

// TLS is on by default, as on real hosts: the cluster directory gets a CA
// and certificates (<Dir>/tls unless Spec.TLSDir names another directory,
// e.g. scripts/make-test-ca.sh output), issued with binlogd/mtls when
// missing:
//
//	ca.crt, ca.key       the cluster CA (kept: a restarted cluster reuses it)
//	nodeN.crt/.key       binlogd N (tls_* in its config)
//	proxyN.crt/.key      sqlproxy N (-tls-*: the hop and its binlogd link)
//	admin.crt/.key       this package's Admin clients (AddNode, Status, ...)
//
// Spec.InsecureNoTLS runs everything in the clear instead.

const (
	caValidity   = 10 * 365 * 24 * time.Hour
	certValidity = 365 * 24 * time.Hour
)

// TLSPath is the certificate directory ("" with InsecureNoTLS).
func (s Spec) TLSPath() string {
	if s.InsecureNoTLS {
		return ""
	}
	dir := s.TLSDir
	if dir == "" {
		dir = filepath.Join(s.Dir, "tls")
	}
	if abs, err := filepath.Abs(dir); err == nil { // configs resolve relative paths from their own dir
		dir = abs
	}
	return dir
}

// ensureTLS issues what node id needs that the directory lacks: the CA,
// the admin certificate, node id's and proxy id's.
func (s Spec) ensureTLS(id int) error {
	dir := s.TLSPath()
	if dir == "" {
		return nil
	}
	if !exists(filepath.Join(dir, mtls.CACertFile)) {
		if err := mtls.WriteCA(dir, caValidity); err != nil {
			return fmt.Errorf("localcluster: TLS CA: %w", err)
		}
	}
	hosts := []string{s.host(id), "127.0.0.1", "::1", "localhost"}
	for _, x := range []struct {
		id    mtls.Identity
		hosts []string
	}{
		{mtls.Identity{Role: mtls.RoleAdmin}, nil},
		{mtls.Identity{Role: mtls.RoleNode, ID: uint32(id)}, hosts},
		{mtls.Identity{Role: mtls.RoleProxy, ID: uint32(id)}, hosts},
	} {
		if exists(mtls.DirFiles(dir, x.id).Cert) {
			continue
		}
		if _, _, err := mtls.WriteCert(dir, x.id, x.hosts, certValidity); err != nil {
			return fmt.Errorf("localcluster: certificate for %s: %w", x.id, err)
		}
	}
	return nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return !errors.Is(err, os.ErrNotExist)
}

// TLSFiles are identity id's files (zero with InsecureNoTLS).
func (s Spec) TLSFiles(id mtls.Identity) mtls.Files {
	dir := s.TLSPath()
	if dir == "" {
		return mtls.Files{}
	}
	return mtls.DirFiles(dir, id)
}

// tlsFiles are binlogd id's files.
func (s Spec) tlsFiles(id int) mtls.Files {
	return s.TLSFiles(mtls.Identity{Role: mtls.RoleNode, ID: uint32(id)})
}

func (s Spec) security(id int) config.Security {
	f := s.tlsFiles(id)
	return config.Security{TLSCert: f.Cert, TLSKey: f.Key, TLSCA: f.CA, InsecureNoTLS: s.InsecureNoTLS}
}

func (s Spec) proxyTLSArgs(id int) []string {
	f := s.TLSFiles(mtls.Identity{Role: mtls.RoleProxy, ID: uint32(id)})
	if !f.Enabled() {
		return []string{"-insecure"}
	}
	return []string{"-tls-cert", f.Cert, "-tls-key", f.Key, "-tls-ca", f.CA}
}

// AdminDialOption is the credential of this package's Admin clients: the
// admin certificate (every Admin call is allowed to it), or plain with
// InsecureNoTLS. The server must present a node certificate (any node's:
// adminCreds wants the node dialled).
func (s Spec) AdminDialOption() (grpc.DialOption, error) { return s.adminCreds(0) }

// adminCreds is AdminDialOption for node id's Admin client: the server
// must be binlogd id (0: any binlogd).
func (s Spec) adminCreds(id uint32) (grpc.DialOption, error) {
	f := s.TLSFiles(mtls.Identity{Role: mtls.RoleAdmin})
	if !f.Enabled() {
		return grpc.WithTransportCredentials(insecure.NewCredentials()), nil
	}
	m, err := mtls.Load(f, time.Now())
	if err != nil {
		return nil, err
	}
	return grpc.WithTransportCredentials(m.ClientCredentials(mtls.ExpectNode(id))), nil
}
