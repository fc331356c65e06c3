package sqlproxy

import (
	"context"
	"strings"
	"testing"
)

// TestMySQLSocket checks that Config.MySQLSocket sends sessions to this
// node's MariaDB over its unix socket (MariaDB sees user@localhost) and
// that statements, prepared ones included, work there as over TCP.
func TestMySQLSocket(t *testing.T) {
	m := startInstances(t, 1)[0]
	ctx := context.Background()
	for _, tc := range []struct {
		socket, host string
	}{{"", "127.0.0.1"}, {m.Socket(), "localhost"}} {
		p := startProxy(t, 1, masterView(m), Linearizable, []string{m.Addr()}, func(c *Config) { c.MySQLSocket = tc.socket })
		db := appDB(t, p.addr, "", false)
		var user string
		if err := db.QueryRowContext(ctx, "SELECT USER()").Scan(&user); err != nil {
			t.Fatal(err)
		}
		if _, host, _ := strings.Cut(user, "@"); host != tc.host {
			t.Fatalf("socket %q: MariaDB saw %s, want host %s", tc.socket, user, tc.host)
		}
		st, err := db.PrepareContext(ctx, "SELECT ? + 1")
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := st.QueryRowContext(ctx, 41).Scan(&n); err != nil || n != 42 {
			t.Fatalf("socket %q: prepared select: %d, %v", tc.socket, n, err)
		}
		st.Close()
	}
}
