package mtls

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"
)

// Sentinel errors; Load wraps them in a *FileError.
var (
	// ErrUnreadable: the file is missing or unreadable.
	ErrUnreadable = errors.New("cannot read file")
	// ErrNoCert: no PEM certificate in the file.
	ErrNoCert = errors.New("no PEM certificate")
	// ErrExpired: the certificate is outside its validity period.
	ErrExpired = errors.New("certificate not valid now")
	// ErrKeyExposed: the private key's file has group or other
	// permission bits. Whoever reads it can pose as this node or proxy
	// to the whole cluster; binlogd check says the same, and the
	// credentials file is refused alike.
	ErrKeyExposed = errors.New("private key readable by others: chmod 600 it")
	// ErrPair: the key does not belong to the certificate (or is not a key).
	ErrPair = errors.New("key does not match certificate")
	// ErrNotByCA: the certificate does not chain to the CA file, or lacks
	// the serverAuth/clientAuth usage an mTLS link needs on both ends.
	ErrNotByCA = errors.New("certificate not accepted by the CA")
)

// Which file of a Files a FileError is about.
const (
	Cert = "cert"
	Key  = "key"
	CA   = "ca"
)

// FileError says which of the three files is wrong and why.
type FileError struct {
	Which string // Cert, Key or CA
	Path  string
	Err   error // wraps one of the sentinels
}

func (e *FileError) Error() string { return fmt.Sprintf("%s: %v", e.Path, e.Err) }
func (e *FileError) Unwrap() error { return e.Err }

// Files are the PEM files of one node. All three or none are set.
type Files struct {
	Cert string // the node's certificate (chain), PEM
	Key  string // its private key, PEM
	CA   string // the cluster CA certificate(s), PEM
}

// Enabled reports whether any file is set.
func (f Files) Enabled() bool { return f.Cert != "" || f.Key != "" || f.CA != "" }

// Material is a loaded, checked Files.
type Material struct {
	Files Files
	Cert  tls.Certificate
	Leaf  *x509.Certificate
	Pool  *x509.CertPool
	// Identity is who Leaf says we are (its phxgo:// URI SAN).
	Identity Identity
}

// Load reads and checks f at time now. Errors are *FileError (which file,
// which sentinel); a missing file name is a plain error naming the
// missing one.
func Load(f Files, now time.Time) (*Material, error) {
	for _, x := range []struct{ which, path string }{{Cert, f.Cert}, {Key, f.Key}, {CA, f.CA}} {
		if x.path == "" {
			return nil, &FileError{Which: x.which, Err: fmt.Errorf("%s file not set (set all three of cert, key and CA, or none)", x.which)}
		}
	}
	certPEM, err := os.ReadFile(f.Cert)
	if err != nil {
		return nil, &FileError{Cert, f.Cert, fmt.Errorf("%w: %v", ErrUnreadable, err)}
	}
	keyPEM, err := os.ReadFile(f.Key)
	if err != nil {
		return nil, &FileError{Key, f.Key, fmt.Errorf("%w: %v", ErrUnreadable, err)}
	}
	if st, err := os.Stat(f.Key); err == nil && st.Mode().Perm()&0o077 != 0 {
		return nil, &FileError{Key, f.Key, fmt.Errorf("%w (mode %04o)", ErrKeyExposed, st.Mode().Perm())}
	}
	caPEM, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, &FileError{CA, f.CA, fmt.Errorf("%w: %v", ErrUnreadable, err)}
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, &FileError{CA, f.CA, ErrNoCert}
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		if !hasCert(certPEM) { // tell "no certificate" from "wrong key"
			return nil, &FileError{Cert, f.Cert, ErrNoCert}
		}
		return nil, &FileError{Key, f.Key, fmt.Errorf("%w %s: %v", ErrPair, f.Cert, err)}
	}
	leaf := pair.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, &FileError{Cert, f.Cert, fmt.Errorf("%w: %v", ErrNoCert, err)}
		}
	}
	if now.Before(leaf.NotBefore) || now.After(leaf.NotAfter) {
		return nil, &FileError{Cert, f.Cert, fmt.Errorf("%w: valid from %s to %s, now is %s", ErrExpired,
			leaf.NotBefore.UTC().Format(time.RFC3339), leaf.NotAfter.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))}
	}
	inter := x509.NewCertPool()
	for _, der := range pair.Certificate[1:] {
		if c, err := x509.ParseCertificate(der); err == nil {
			inter.AddCert(c)
		}
	}
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		opts := x509.VerifyOptions{Roots: pool, Intermediates: inter, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{usage}}
		if _, err := leaf.Verify(opts); err != nil {
			return nil, &FileError{Cert, f.Cert, fmt.Errorf("%w %s (%s usage): %v", ErrNotByCA, f.CA, usageName(usage), err)}
		}
	}
	// A certificate without an identity would be refused by every peer's
	// authorisation; refuse it here, where the error can name the file.
	id, err := IdentityOf(leaf)
	if err != nil {
		return nil, &FileError{Cert, f.Cert, err}
	}
	return &Material{Files: f, Cert: pair, Leaf: leaf, Pool: pool, Identity: id}, nil
}

func hasCert(pemBytes []byte) bool {
	p := x509.NewCertPool()
	return p.AppendCertsFromPEM(pemBytes)
}

func usageName(u x509.ExtKeyUsage) string {
	if u == x509.ExtKeyUsageServerAuth {
		return "serverAuth"
	}
	return "clientAuth"
}

// Server is the listening side of a link: it presents the node's
// certificate and requires a client certificate from the CA.
func (m *Material) Server() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{m.Cert},
		ClientCAs:    m.Pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
	}
}

// ServerOptionalClient is Server for a port that also serves clients
// without a certificate (sqlproxy's MySQL port): a certificate that is
// given must still chain to the CA, and the caller decides what an
// unauthenticated connection may do (PeerVerified).
func (m *Material) ServerOptionalClient() *tls.Config {
	c := m.Server()
	c.ClientAuth = tls.VerifyClientCertIfGiven
	return c
}

// Client is the dialling side: it presents the node's certificate and
// verifies the server's against the CA and serverName (an IP or DNS
// name from the address dialled; "" lets gRPC fill it from the target).
// It does not check whose certificate that is: every dial in phxgo knows
// whom it wants and uses ClientFor or ClientCredentials (expect.go);
// Client is their base and the tests'.
func (m *Material) Client(serverName string) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{m.Cert},
		RootCAs:      m.Pool,
		ServerName:   serverName,
	}
}

// PeerVerified reports whether a finished handshake carried a client
// certificate that chains to the CA.
func PeerVerified(st tls.ConnectionState) bool { return len(st.VerifiedChains) > 0 }
