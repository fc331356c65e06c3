package config

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"phxgo/binlogd/mtls/mtlstest"
)

// TestLinkSecurityRequired: no tls_* keys and no insecure_no_tls is
// refused with the fix in the error; both at once too; and a certificate
// of another identity than this node's.
func TestLinkSecurityRequired(t *testing.T) {
	ca := mtlstest.MakeCA(t, 2)
	load := func(body string) error {
		_, err := loadBody(t, body)
		return err
	}
	plain := strings.Replace(good, `"insecure_no_tls":true,`, ``, 1)
	err := load(plain)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `"tls_cert"`) || !strings.Contains(err.Error(), "insecure_no_tls") {
		t.Fatalf("no TLS, no opt-out: %v", err)
	}
	if err := load(good); err != nil {
		t.Fatalf("insecure_no_tls: %v", err)
	}
	keys := func(base string) string {
		return `"tls_cert":"` + filepath.Join(ca, base+".crt") + `","tls_key":"` + filepath.Join(ca, base+".key") + `","tls_ca":"` + filepath.Join(ca, "ca.crt") + `",`
	}
	if err := load(strings.Replace(good, `"id":1,`, `"id":1,`+keys("node1"), 1)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `"insecure_no_tls"`) {
		t.Fatalf("TLS and insecure_no_tls: %v", err)
	}
	for _, base := range []string{"node2", "proxy1", "admin"} {
		err := load(strings.Replace(plain, `"id":1,`, `"id":1,`+keys(base), 1))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `"tls_cert"`) || !strings.Contains(err.Error(), "phxgo://node/1") {
			t.Fatalf("%s certificate for node 1: %v", base, err)
		}
	}
	if err := load(strings.Replace(plain, `"id":1,`, `"id":1,`+keys("node1"), 1)); err != nil {
		t.Fatalf("node1 certificate: %v", err)
	}
}

func TestTLSKeys(t *testing.T) {
	ca := mtlstest.MakeCA(t, 2)
	other := mtlstest.MakeCA(t, 1)
	f1, f2, fo := mtlstest.Files(ca, 1), mtlstest.Files(ca, 2), mtlstest.Files(other, 1)
	tlsKeys := func(cert, key, caFile string) string {
		var parts []string
		for k, v := range map[string]string{"tls_cert": cert, "tls_key": key, "tls_ca": caFile} {
			if v != "" {
				parts = append(parts, `"`+k+`":"`+v+`"`)
			}
		}
		return strings.Join(parts, ",")
	}
	load := func(keys string) (*Config, error) {
		body := strings.Replace(good, `"insecure_no_tls":true,`, keys+`,`, 1)
		return loadBody(t, body)
	}
	c, err := load(tlsKeys(f1.Cert, f1.Key, f1.CA))
	if err != nil {
		t.Fatal(err)
	}
	if m, err := c.TLS(); err != nil || m == nil || m.Leaf.Subject.CommonName != "node1" {
		t.Fatalf("TLS() = %v, %v", m, err)
	}
	cases := []struct {
		name, keys, key, file string
	}{
		{"cert only", tlsKeys(f1.Cert, "", ""), "tls_key", ""},
		{"unreadable key", tlsKeys(f1.Cert, filepath.Join(ca, "missing.key"), f1.CA), "tls_key", "missing.key"},
		{"mismatched pair", tlsKeys(f1.Cert, f2.Key, f1.CA), "tls_key", f2.Key},
		{"other CA", tlsKeys(fo.Cert, fo.Key, f1.CA), "tls_cert", fo.Cert},
		{"CA is a key", tlsKeys(f1.Cert, f1.Key, f1.Key), "tls_ca", f1.Key},
	}
	for _, tc := range cases {
		_, err := load(tc.keys)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `key "`+tc.key+`"`) ||
			!strings.Contains(err.Error(), tc.file) || !strings.Contains(err.Error(), "c.json") {
			t.Errorf("%s: error does not name key %s, file %q and the config: %v", tc.name, tc.key, tc.file, err)
		}
	}
}

func TestReplAddrLoopback(t *testing.T) {
	body := strings.Replace(good, `"repl_addr":"127.0.0.1:3"`, `"repl_addr":"10.0.0.1:3"`, 1)
	_, err := loadBody(t, body)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `key "repl_addr"`) || !strings.Contains(err.Error(), "allow_remote_repl") {
		t.Fatalf("non-loopback repl_addr: %v", err)
	}
	body = strings.Replace(body, `"id":1,`, `"id":1,"allow_remote_repl":true,`, 1)
	if _, err := loadBody(t, body); err != nil {
		t.Fatalf("with allow_remote_repl: %v", err)
	}
	// Another member's repl_addr is that member's business.
	body = strings.Replace(good, `"repl_addr":"127.0.0.1:6"`, `"repl_addr":"10.0.0.2:6"`, 1)
	if _, err := loadBody(t, body); err != nil {
		t.Fatal(err)
	}
	if got := (&Config{HTTPAddr: ":9100"}).HTTPListenAddr(); got != "127.0.0.1:9100" {
		t.Fatalf("HTTPListenAddr(:9100) = %s", got)
	}
}
