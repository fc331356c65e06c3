package mtls

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The issuer: a cluster CA and the certificates of its nodes, proxies and
// operators, in pure Go (no openssl). The CA key lives in the directory
// next to what it signed; `binlogd init` and localcluster keep it there,
// an operator who cares moves it offline after issuing.
//
//	dir/ca.crt, dir/ca.key           WriteCA: EC P-256, self-signed, CA:TRUE
//	dir/<FileBase>.crt, .key         WriteCert: EC P-256, serverAuth+clientAuth,
//	                                 SANs = hosts + the identity's phxgo:// URI
//
// Nothing is ever overwritten: a second WriteCA or WriteCert for the same
// file is ErrExists, so a rerun cannot silently replace a cluster's CA.

// ErrExists: WriteCA or WriteCert found a file it would write.
var ErrExists = errors.New("file exists (refusing to overwrite)")

// Files of a CA directory.
const (
	CACertFile = "ca.crt"
	CAKeyFile  = "ca.key"
)

// backdate covers clocks a little behind the issuer's.
const backdate = time.Hour

// DirFiles are id's files in a directory written by WriteCA/WriteCert.
func DirFiles(dir string, id Identity) Files {
	return Files{
		Cert: filepath.Join(dir, id.FileBase()+".crt"),
		Key:  filepath.Join(dir, id.FileBase()+".key"),
		CA:   filepath.Join(dir, CACertFile),
	}
}

// WriteCA creates dir/ca.crt and dir/ca.key (key 0600), refusing to
// overwrite existing ones. dir is created (0755) if missing.
func WriteCA(dir string, validFor time.Duration) error {
	if validFor <= 0 {
		return fmt.Errorf("mtls: CA validity %v must be positive", validFor)
	}
	certPath, keyPath := filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile)
	if err := refuseExisting(certPath, keyPath); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("mtls: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("mtls: CA key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{Organization: []string{"phxgo"}, CommonName: "phxgo CA " + serial.Text(16)[:8]},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validFor),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true, // signs leaves only
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("mtls: CA certificate: %w", err)
	}
	// Key first: a crash between the two leaves a key without a
	// certificate, which the next WriteCA refuses rather than pairing a new
	// certificate with a stranger's key.
	if err := writeKey(keyPath, key); err != nil {
		return err
	}
	return writeNew(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

// WriteCert issues a certificate for id signed by dir's CA:
// dir/<FileBase>.crt and .key (0600), EC P-256, serverAuth+clientAuth,
// SANs = hosts (IPs or DNS names) + id.URI(). Refuses to overwrite.
func WriteCert(dir string, id Identity, hosts []string, validFor time.Duration) (certPath, keyPath string, err error) {
	if err := id.Validate(); err != nil {
		return "", "", err
	}
	if validFor <= 0 {
		return "", "", fmt.Errorf("mtls: certificate validity %v must be positive", validFor)
	}
	f := DirFiles(dir, id)
	certPath, keyPath = f.Cert, f.Key
	if err := refuseExisting(certPath, keyPath); err != nil {
		return "", "", err
	}
	ca, caKey, err := loadCA(dir)
	if err != nil {
		return "", "", err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", fmt.Errorf("mtls: key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return "", "", err
	}
	uri, err := url.Parse(id.URI())
	if err != nil {
		return "", "", fmt.Errorf("mtls: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{Organization: []string{"phxgo"}, CommonName: id.FileBase()},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validFor),
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		URIs:                  []*url.URL{uri},
	}
	if tmpl.NotAfter.After(ca.NotAfter) {
		tmpl.NotAfter = ca.NotAfter // a leaf outliving its CA fails verification anyway; say so in the cert
	}
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		switch {
		case h == "":
		case net.ParseIP(strings.Trim(h, "[]")) != nil:
			tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(strings.Trim(h, "[]")))
		default:
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return "", "", fmt.Errorf("mtls: certificate for %s: %w", id, err)
	}
	if err := writeKey(keyPath, key); err != nil {
		return "", "", err
	}
	if err := writeNew(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return "", "", err
	}
	return certPath, keyPath, nil
}

func loadCA(dir string) (*x509.Certificate, crypto.Signer, error) {
	certPath, keyPath := filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile)
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, nil, &FileError{CA, certPath, fmt.Errorf("%w: %v (run WriteCA / `binlogd init` first)", ErrUnreadable, err)}
	}
	b, _ := pem.Decode(certPEM)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, nil, &FileError{CA, certPath, ErrNoCert}
	}
	ca, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return nil, nil, &FileError{CA, certPath, fmt.Errorf("%w: %v", ErrNoCert, err)}
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, nil, &FileError{Key, keyPath, fmt.Errorf("%w: %v (the CA key is needed to issue)", ErrUnreadable, err)}
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, nil, &FileError{Key, keyPath, fmt.Errorf("%w: no PEM key", ErrPair)}
	}
	var signer crypto.Signer
	switch kb.Type {
	case "EC PRIVATE KEY":
		signer, err = x509.ParseECPrivateKey(kb.Bytes)
	default:
		var k any
		if k, err = x509.ParsePKCS8PrivateKey(kb.Bytes); err == nil {
			var ok bool
			if signer, ok = k.(crypto.Signer); !ok {
				err = fmt.Errorf("key type %T cannot sign", k)
			}
		}
	}
	if err != nil {
		return nil, nil, &FileError{Key, keyPath, fmt.Errorf("%w: %v", ErrPair, err)}
	}
	if pub, ok := ca.PublicKey.(interface{ Equal(crypto.PublicKey) bool }); !ok || !pub.Equal(signer.Public()) {
		return nil, nil, &FileError{Key, keyPath, fmt.Errorf("%w %s", ErrPair, certPath)}
	}
	return ca, signer, nil
}

func randomSerial() (*big.Int, error) {
	s, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("mtls: serial: %w", err)
	}
	return s.Add(s, big.NewInt(1)), nil
}

func refuseExisting(paths ...string) error {
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("mtls: %s: %w", p, ErrExists)
		} else if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("mtls: %w", err)
		}
	}
	return nil
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("mtls: %w", err)
	}
	return writeNew(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
}

// writeNew writes a file that must not exist yet (O_EXCL), synced, with
// mode perm regardless of the umask.
func writeNew(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("mtls: %s: %w", path, ErrExists)
		}
		return fmt.Errorf("mtls: %w", err)
	}
	err = f.Chmod(perm)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		return nil
	}
	os.Remove(path)
	return fmt.Errorf("mtls: writing %s: %w", path, err)
}
