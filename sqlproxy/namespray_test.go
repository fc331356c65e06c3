package sqlproxy

import (
	"fmt"
	"sync"
	"testing"
)

// The attack "try random user names on the proxy, no password": each
// unknown name costs a mysql.user lookup, and the proxy used to open a
// MariaDB connection per concurrent lookup, so a stranger could use up
// MariaDB's max_connections for everyone (audit: 1,000 names a second
// took it to 501 of 500). The lookups now share a few connections:
// MariaDB's Max_used_connections, counted from a FLUSH STATUS before the
// attack, stays small while every name is refused.
func TestRandomUserNamesKeepMariaDBConnections(t *testing.T) {
	a := startInstances(t, 1)[0]
	p := startProxy(t, 1, masterView(a), Linearizable, []string{a.Addr()}, func(c *Config) { c.AdminUser = adminUser })
	execRoot(t, a, "FLUSH STATUS")
	const attempts = 48
	var wg sync.WaitGroup
	for i := range attempts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db := userDB(t, p.addr, fmt.Sprintf("stranger%03d", i), "guess", "")
			if err := db.Ping(); err == nil {
				t.Errorf("stranger%03d logged in", i)
			}
		}()
	}
	wg.Wait()
	root, err := a.DB("")
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	var name string
	var used int
	if err := root.QueryRow("SHOW GLOBAL STATUS LIKE 'Max_used_connections'").Scan(&name, &used); err != nil {
		t.Fatal(err)
	}
	// The lookups' few, the proxy's health checks and pool, this query.
	if used > 12 {
		t.Fatalf("Max_used_connections %d during %d concurrent logins as unknown users, want a few", used, attempts)
	}
	t.Logf("Max_used_connections %d during %d concurrent logins as unknown users", used, attempts)
}
