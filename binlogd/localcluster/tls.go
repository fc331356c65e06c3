package localcluster

import (
	"path/filepath"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"phxgo/binlogd/config"
	"phxgo/binlogd/mtls"
)

// tlsFiles are node id's files in Spec.TLSDir (zero when TLS is off).
func (s Spec) tlsFiles(id int) mtls.Files {
	if s.TLSDir == "" {
		return mtls.Files{}
	}
	dir, err := filepath.Abs(s.TLSDir) // configs resolve relative paths from their own dir
	if err != nil {
		dir = s.TLSDir
	}
	n := filepath.Join(dir, "node"+strconv.Itoa(id))
	return mtls.Files{Cert: n + ".crt", Key: n + ".key", CA: filepath.Join(dir, "ca.crt")}
}

func (s Spec) security(id int) config.Security {
	f := s.tlsFiles(id)
	return config.Security{TLSCert: f.Cert, TLSKey: f.Key, TLSCA: f.CA}
}

func (s Spec) proxyTLSArgs(id int) []string {
	f := s.tlsFiles(id)
	if !f.Enabled() {
		return nil
	}
	return []string{"-tls-cert", f.Cert, "-tls-key", f.Key, "-tls-ca", f.CA}
}

// adminCreds: the Admin client for node id presents that node's own
// certificate (any certificate of the CA would do).
func (s Spec) adminCreds(id uint32) (grpc.DialOption, error) {
	f := s.tlsFiles(int(id))
	if !f.Enabled() {
		return grpc.WithTransportCredentials(insecure.NewCredentials()), nil
	}
	m, err := mtls.Load(f, time.Now())
	if err != nil {
		return nil, err
	}
	return grpc.WithTransportCredentials(credentials.NewTLS(m.Client(""))), nil
}
