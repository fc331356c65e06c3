package sqlproxy

import (
	"log/slog"
	"strings"
	"testing"

	"phxgo/internal/testkit"
)

// A flood of refused logins writes one log line per refusalLogEvery,
// not one per connection, and a line quotes at most maxLoggedUser bytes
// of the user name (audit: 60,000-character names made 60 KB lines).
// The metric still counts every refusal.
func TestRefusalLogsAreBounded(t *testing.T) {
	a := startInstances(t, 1)[0]
	var logs testkit.LogBuffer
	p := startProxy(t, 1, masterView(a), Linearizable, []string{a.Addr()}, func(c *Config) {
		c.AdminUser = adminUser
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	long := "phxgo_" + strings.Repeat("x", 10000)
	const tries = 12
	for range tries {
		wantDenied(t, userDB(t, p.addr, long, "guess", ""), "as a long phxgo_ name")
	}
	if n := refused(t, p, "denied_user"); n != tries {
		t.Fatalf("refused denied_user = %v, want %d", n, tries)
	}
	out := logs.String()
	if n := strings.Count(out, "refused a login as a denied user"); n != 1 {
		t.Fatalf("%d log lines for %d refusals within %v, want 1:\n%.2000s", n, tries, refusalLogEvery, out)
	}
	if strings.Contains(out, strings.Repeat("x", maxLoggedUser+1)) {
		t.Fatalf("a log line quotes more than %d bytes of the user name", maxLoggedUser)
	}
}
