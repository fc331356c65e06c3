package mtls_test

import (
	"crypto/x509"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"phxgo/binlogd/mtls"
)

// TestIssue: a CA and one certificate of each role load with mtls.Load,
// carry their identity, and have the files and modes the API promises.
func TestIssue(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	if err := mtls.WriteCA(dir, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	ids := []mtls.Identity{{Role: mtls.RoleNode, ID: 3}, {Role: mtls.RoleProxy, ID: 3}, {Role: mtls.RoleAdmin}}
	for _, id := range ids {
		certPath, keyPath, err := mtls.WriteCert(dir, id, []string{"127.0.0.1", "::1", "localhost", "db3.example"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if want := mtls.DirFiles(dir, id); certPath != want.Cert || keyPath != want.Key {
			t.Fatalf("%s: paths %s %s, want %+v", id, certPath, keyPath, want)
		}
		if st, err := os.Stat(keyPath); err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s key mode %v %v", id, st.Mode(), err)
		}
		m, err := mtls.Load(mtls.DirFiles(dir, id), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if m.Identity != id {
			t.Fatalf("loaded identity %v, want %v", m.Identity, id)
		}
		if len(m.Leaf.IPAddresses) != 2 || len(m.Leaf.DNSNames) != 2 || m.Leaf.URIs[0].String() != id.URI() {
			t.Fatalf("%s SANs: %v %v %v", id, m.Leaf.IPAddresses, m.Leaf.DNSNames, m.Leaf.URIs)
		}
		if err := m.Leaf.VerifyHostname("db3.example"); err != nil {
			t.Fatal(err)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "ca.key")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("ca.key mode %v %v", st.Mode(), err)
	}
	// Nothing is overwritten.
	if err := mtls.WriteCA(dir, time.Hour); !errors.Is(err, mtls.ErrExists) {
		t.Fatalf("second WriteCA: %v", err)
	}
	if _, _, err := mtls.WriteCert(dir, ids[0], nil, time.Hour); !errors.Is(err, mtls.ErrExists) {
		t.Fatalf("second WriteCert: %v", err)
	}
	// Bad identities and a missing CA are refused.
	for _, id := range []mtls.Identity{{Role: mtls.RoleNode}, {Role: mtls.RoleAdmin, ID: 1}, {Role: "root", ID: 1}} {
		if _, _, err := mtls.WriteCert(dir, id, nil, time.Hour); !errors.Is(err, mtls.ErrBadIdentity) {
			t.Fatalf("WriteCert(%+v): %v", id, err)
		}
	}
	if _, _, err := mtls.WriteCert(t.TempDir(), ids[0], nil, time.Hour); !errors.Is(err, mtls.ErrUnreadable) {
		t.Fatalf("WriteCert without CA: %v", err)
	}
}

func TestIdentityStrings(t *testing.T) {
	cases := []struct {
		id             mtls.Identity
		str, uri, base string
	}{
		{mtls.Identity{Role: mtls.RoleNode, ID: 3}, "node 3", "phxgo://node/3", "node3"},
		{mtls.Identity{Role: mtls.RoleProxy, ID: 12}, "proxy 12", "phxgo://proxy/12", "proxy12"},
		{mtls.Identity{Role: mtls.RoleAdmin}, "admin", "phxgo://admin", "admin"},
	}
	for _, c := range cases {
		if c.id.String() != c.str || c.id.URI() != c.uri || c.id.FileBase() != c.base {
			t.Fatalf("%+v: %q %q %q", c.id, c.id.String(), c.id.URI(), c.id.FileBase())
		}
		u, _ := url.Parse(c.uri)
		if got, err := mtls.IdentityOf(&x509.Certificate{URIs: []*url.URL{u}}); err != nil || got != c.id {
			t.Fatalf("IdentityOf(%s) = %v, %v", c.uri, got, err)
		}
	}
}

func TestIdentityOfRefuses(t *testing.T) {
	parse := func(s string) *url.URL {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	if _, err := mtls.IdentityOf(&x509.Certificate{URIs: []*url.URL{parse("spiffe://x/y")}}); !errors.Is(err, mtls.ErrNoIdentity) {
		t.Fatalf("no phxgo URI: %v", err)
	}
	for _, uris := range [][]string{
		{"phxgo://node/1", "phxgo://admin"}, // ambiguous
		{"phxgo://node/0"}, {"phxgo://node/x"}, {"phxgo://node"}, {"phxgo://admin/1"},
		{"phxgo://root/1"}, {"phxgo://node/1?x=1"}, {"phxgo://node:1/1"}, {"phxgo://node/99999999999"},
	} {
		c := &x509.Certificate{}
		for _, s := range uris {
			c.URIs = append(c.URIs, parse(s))
		}
		if id, err := mtls.IdentityOf(c); !errors.Is(err, mtls.ErrBadIdentity) {
			t.Fatalf("%v: got %v, %v; want ErrBadIdentity", uris, id, err)
		}
	}
}

// TestLoadRefusesNoIdentity: a certificate without a phxgo:// URI (as
// make-test-ca.sh made them before identities) is refused at load time,
// naming the file and telling to re-issue.
func TestLoadRefusesNoIdentity(t *testing.T) {
	f := writeSelfSignedCA(t, t.TempDir(), time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	_, err := mtls.Load(f, time.Now())
	var fe *mtls.FileError
	if !errors.Is(err, mtls.ErrNoIdentity) || !errors.As(err, &fe) || fe.Which != mtls.Cert || !strings.Contains(err.Error(), f.Cert) || !strings.Contains(err.Error(), "re-issue") {
		t.Fatalf("err = %v; want ErrNoIdentity naming %s", err, f.Cert)
	}
}
