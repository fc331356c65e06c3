package mtls_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"phxgo/binlogd/mtls"
	"phxgo/binlogd/mtls/mtlstest"
)

func TestLoadGood(t *testing.T) {
	dir := mtlstest.MakeCA(t, 2)
	m, err := mtls.Load(mtlstest.Files(dir, 1), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if m.Leaf.Subject.CommonName != "node1" {
		t.Fatalf("leaf CN %q", m.Leaf.Subject.CommonName)
	}
}

func TestLoadErrorsNameTheFile(t *testing.T) {
	dir := mtlstest.MakeCA(t, 2)
	other := mtlstest.MakeCA(t, 1)
	good := mtlstest.Files(dir, 1)
	exposed := filepath.Join(t.TempDir(), "exposed.key")
	if key, err := os.ReadFile(good.Key); err != nil {
		t.Fatal(err)
	} else if err := os.WriteFile(exposed, key, 0o644); err != nil {
		t.Fatal(err)
	}
	junk := filepath.Join(t.TempDir(), "junk.pem")
	if err := os.WriteFile(junk, []byte("not pem\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		f     mtls.Files
		which string
		want  error
	}{
		{"missing cert", mtls.Files{Cert: filepath.Join(dir, "nope.crt"), Key: good.Key, CA: good.CA}, mtls.Cert, mtls.ErrUnreadable},
		{"missing key", mtls.Files{Cert: good.Cert, Key: filepath.Join(dir, "nope.key"), CA: good.CA}, mtls.Key, mtls.ErrUnreadable},
		{"ca not pem", mtls.Files{Cert: good.Cert, Key: good.Key, CA: junk}, mtls.CA, mtls.ErrNoCert},
		{"cert not pem", mtls.Files{Cert: junk, Key: good.Key, CA: good.CA}, mtls.Cert, mtls.ErrNoCert},
		{"key readable by others", mtls.Files{Cert: good.Cert, Key: exposed, CA: good.CA}, mtls.Key, mtls.ErrKeyExposed},
		{"mismatched pair", mtls.Files{Cert: good.Cert, Key: mtlstest.Files(dir, 2).Key, CA: good.CA}, mtls.Key, mtls.ErrPair},
		{"other CA", mtls.Files{Cert: mtlstest.Files(other, 1).Cert, Key: mtlstest.Files(other, 1).Key, CA: good.CA}, mtls.Cert, mtls.ErrNotByCA},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := mtls.Load(c.f, time.Now())
			var fe *mtls.FileError
			if !errors.As(err, &fe) || fe.Which != c.which || !errors.Is(err, c.want) {
				t.Fatalf("err = %v; want a %s FileError wrapping %v", err, c.which, c.want)
			}
			if !strings.Contains(err.Error(), fe.Path) || fe.Path == "" {
				t.Fatalf("error %q does not name the file", err)
			}
		})
	}
	if _, err := mtls.Load(mtls.Files{Cert: good.Cert}, time.Now()); err == nil || !strings.Contains(err.Error(), "key file not set") {
		t.Fatalf("partial files: %v", err)
	}
}

func TestLoadExpired(t *testing.T) {
	dir := t.TempDir()
	f := writeSelfSignedCA(t, dir, time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour))
	_, err := mtls.Load(f, time.Now())
	if !errors.Is(err, mtls.ErrExpired) || !strings.Contains(err.Error(), f.Cert) {
		t.Fatalf("err = %v; want ErrExpired naming %s", err, f.Cert)
	}
}

// TestHandshake: two nodes of one CA talk; a node of another CA is
// refused by the server, and a server of another CA by the client.
func TestHandshake(t *testing.T) {
	dir := mtlstest.MakeCA(t, 2)
	other := mtlstest.MakeCA(t, 1)
	load := func(f mtls.Files) *mtls.Material {
		m, err := mtls.Load(f, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	srv, cli, stranger := load(mtlstest.Files(dir, 1)), load(mtlstest.Files(dir, 2)), load(mtlstest.Files(other, 1))
	handshake := func(server, client *tls.Config) (serverErr, clientErr error) {
		a, b := net.Pipe()
		done := make(chan error, 1)
		go func() {
			s := tls.Server(a, server)
			done <- s.Handshake()
			s.Close()
		}()
		c := tls.Client(b, client)
		clientErr = c.Handshake()
		if clientErr == nil {
			// TLS 1.3: a refused client certificate shows on the first read.
			_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
			_, clientErr = c.Read(make([]byte, 1))
			if errors.Is(clientErr, os.ErrDeadlineExceeded) || clientErr != nil && strings.Contains(clientErr.Error(), "EOF") {
				clientErr = nil
			}
		}
		c.Close()
		return <-done, clientErr
	}
	if se, ce := handshake(srv.Server(), cli.Client("127.0.0.1")); se != nil || ce != nil {
		t.Fatalf("same CA: server %v, client %v", se, ce)
	}
	se, _ := handshake(srv.Server(), stranger.Client("127.0.0.1"))
	if se == nil || !strings.Contains(se.Error(), "certificate") {
		t.Fatalf("client of another CA: server err %v", se)
	}
	_, ce := handshake(stranger.Server(), cli.Client("127.0.0.1"))
	if ce == nil || !strings.Contains(ce.Error(), "unknown authority") {
		t.Fatalf("server of another CA: client err %v", ce)
	}
}

func writeSelfSignedCA(t *testing.T, dir string, from, to time.Time) mtls.Files {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "old"},
		NotBefore: from, NotAfter: to, IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	f := mtls.Files{Cert: filepath.Join(dir, "c.crt"), Key: filepath.Join(dir, "c.key"), CA: filepath.Join(dir, "c.crt")}
	if err := os.WriteFile(f.Cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.Key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}
