package config

import (
	"errors"
	"strings"
	"testing"
)

// What encoding/json alone lets through is refused, and the error names
// the key or the line: a key given twice (json would keep the last
// silently), content after the object, a bad duration.
func TestStrictDecoding(t *testing.T) {
	for _, c := range []struct {
		name, from, to string
		want           []string // all in the error
	}{
		{"duplicate key", `"dir":"n1",`, `"dir":"n1","lease_duration":"5s","lease_duration":"50s",`, []string{`key "lease_duration": given twice`, "line 1"}},
		{"duplicate key, other case", `"dir":"n1",`, `"dir":"n1","lease_duration":"5s","Lease_Duration":"50s",`, []string{`key "Lease_Duration": given twice`}},
		{"duplicate member key", `{"id":2,"grpc_addr":"127.0.0.1:4"`, `{"id":2,"grpc_addr":"127.0.0.1:4","id":2`, []string{`key "members[1].id": given twice`}},
		{"duplicate on a later line", `"members":[`, `"id":1,` + "\n" + ` "members":[`, []string{`key "id": given twice (again at line 2)`}},
		{"two objects", good, good + "\n" + good, []string{"trailing content", "line 6"}},
		{"garbage after", good, good + " garbage", []string{"trailing content", "line 5"}},
		{"bad duration unit", `"dir":"n1",`, `"dir":"n1","lease_duration":"5 seconds",`, []string{`key "lease_duration"`, `"5 seconds" is not a duration`, "unknown unit"}},
		{"bad duration in an embedded struct", `"dir":"n1",`, `"dir":"n1","event_hook_timeout":"soon",`, []string{`key "event_hook_timeout"`, `"soon" is not a duration`}},
		{"bad optional duration", `"dir":"n1",`, `"dir":"n1","group_commit_wait":"1 ms",`, []string{`key "group_commit_wait"`}},
	} {
		body := strings.Replace(good, c.from, c.to, 1)
		if body == good {
			t.Fatalf("%s: %q not in the good config", c.name, c.from)
		}
		_, err := loadBody(t, body)
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", c.name, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v\nwant %q in it", c.name, err, w)
			}
		}
	}
	// Whitespace after the object is fine; so is a key once per object
	// (members' objects repeat "id").
	if _, err := loadBody(t, good+"\n\n  \t\n"); err != nil {
		t.Fatalf("trailing whitespace: %v", err)
	}
}

// The credentials file is decoded the same strict way.
func TestCredentialsStrict(t *testing.T) {
	const cred = `{"capture_user":"c","capture_password":"p","app_user":"a","app_password":"q"}`
	dir := t.TempDir()
	for _, c := range []struct{ body, want string }{
		{`{"capture_user":"c","capture_user":"d","capture_password":"p","app_user":"a","app_password":"q"}`, `key "capture_user": given twice`},
		{cred + cred, "trailing content"},
	} {
		_, err := LoadCredentials(write(t, dir, "cred.json", c.body, 0o600))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.body, err, c.want)
		}
	}
	if _, err := LoadCredentials(write(t, dir, "cred.json", cred, 0o600)); err != nil {
		t.Fatalf("good credentials: %v", err)
	}
}
