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
		_, err := Load(write(t, t.TempDir(), "c.json", body, 0o644))
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
