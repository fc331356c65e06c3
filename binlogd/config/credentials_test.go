package config

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestCredentialsAppDatabases(t *testing.T) {
	p := filepath.Join(t.TempDir(), "cred.json")
	base := Credentials{CaptureUser: "c", CapturePassword: "c", AppUser: "a", AppPassword: "a"}
	for _, bad := range [][]string{{"%"}, {"my%"}, {"a`b"}} {
		cr := base
		cr.AppDatabases = bad
		if err := SaveCredentials(p, cr); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadCredentials(p); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "app_databases") {
			t.Fatalf("app_databases %q: %v", bad, err)
		}
	}
	cr := base
	cr.AppDatabases = []string{`shop`, `shop\_%`}
	if err := SaveCredentials(p, cr); err != nil {
		t.Fatal(err)
	}
	got, err := LoadCredentials(p)
	if err != nil || len(got.AppDatabases) != 2 || got.AppDatabases[1] != `shop\_%` {
		t.Fatalf("%+v %v", got, err)
	}
}
