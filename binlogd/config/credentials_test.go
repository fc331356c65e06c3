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

func TestCredentialsReplAccount(t *testing.T) {
	p := filepath.Join(t.TempDir(), "cred.json")
	base := Credentials{CaptureUser: "c", CapturePassword: "c", AppUser: "a", AppPassword: "a"}
	for _, tc := range []struct {
		user, pw, want string
	}{
		{"r", "", "repl_password"},
		{"", "pw", "repl_user"},
		{"c", "pw", "capture_user"},
	} {
		cr := base
		cr.ReplUser, cr.ReplPassword = tc.user, tc.pw
		if err := SaveCredentials(p, cr); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadCredentials(p); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("repl %q/%q: %v, want an error naming %s", tc.user, tc.pw, err, tc.want)
		}
	}
	cr := base
	if !cr.AddReplAccount() || cr.ReplUser != DefaultReplUser || len(cr.ReplPassword) < 24 {
		t.Fatalf("AddReplAccount: %+v", cr)
	}
	pw := cr.ReplPassword
	if cr.AddReplAccount() || cr.ReplPassword != pw {
		t.Fatal("AddReplAccount replaced an existing account")
	}
	if err := SaveCredentials(p, cr); err != nil {
		t.Fatal(err)
	}
	if got, err := LoadCredentials(p); err != nil || got.ReplUser != DefaultReplUser || got.ReplPassword != pw {
		t.Fatalf("%+v %v", got, err)
	}
}
