package sqlproxy

import (
	"context"
	"crypto/tls"
	"database/sql"
	"testing"
	"time"

	"phxgo/binlogd/mtls/mtlstest"
	"phxgo/binlogd/mysqld"
	"phxgo/sqlproxy/auth"
)

// tlsStore is startProxy's authenticator reading mysql.user in TLS.
func tlsStore(t *testing.T, m *TLS, addrs []string) *auth.Store {
	store := auth.New(auth.Config{User: adminUser, Password: adminPass, Addrs: func() []string { return addrs },
		TLS: func(addr string) *tls.Config { return MySQLClientTLS(m, HostOf(addr)) }})
	t.Cleanup(func() { store.Close() })
	return store
}

// sessionCipher is @@server_id and Ssl_cipher of the backend session a
// read through db lands on (a SELECT: a replica's in RWSplit).
func sessionCipher(t *testing.T, ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (uint32, string) {
	t.Helper()
	var id uint32
	var c string
	if err := q.QueryRowContext(ctx, "SELECT @@server_id, VARIABLE_VALUE FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'SSL_CIPHER'").Scan(&id, &c); err != nil {
		t.Fatal(err)
	}
	return id, c
}

// TestMySQLTLS: MariaDBs with node certificates serve TLS; a proxy with
// Config.MySQLTLS reaches them over TCP in TLS only: the master's
// session, a replica's read (RWSplit), the health checks that make the
// replica eligible and the mysql.user reads (both through go-sql-driver,
// which refuses a server without TLS). A MariaDB without TLS and one
// whose certificate another CA signed are refused; a plain client still
// connects to MariaDB directly.
func TestMySQLTLS(t *testing.T) {
	ca, other := mtlstest.MakeCA(t, 2), mtlstest.MakeCA(t, 1)
	insts := startInstancesOpts(t, 2, func(id uint32) mysqld.Options {
		f := mtlstest.Files(ca, int(id))
		return mysqld.Options{TLS: mysqld.TLSFiles{Cert: f.Cert, Key: f.Key, CA: f.CA}}
	})
	m, r := insts[0], insts[1]
	replicate(t, m, r)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	direct := appDB(t, m.Addr(), "", false) // plain TCP: not required
	var have string
	if err := direct.QueryRowContext(ctx, "SELECT @@have_ssl").Scan(&have); err != nil || have != "YES" {
		t.Fatalf("@@have_ssl = %q (%v), want YES", have, err)
	}
	if _, c := sessionCipher(t, ctx, direct); c != "" {
		t.Fatalf("plain client has cipher %q", c)
	}

	mt := loadMaterial(t, proxyFiles(ca, 1))
	authAddrs := []string{m.Addr()}
	opts := func(c *Config) {
		c.MySQLTLS = mt
		c.AdminUser, c.AdminPassword = adminUser, adminPass
		c.HealthInterval = 50 * time.Millisecond
		c.Hold = 0
	}
	p := serveProxy(t, 1, masterView(m, r), RWSplit, tlsStore(t, mt, authAddrs), opts)
	db := appDB(t, p.addr, "", false)
	db.SetMaxOpenConns(1)
	tx, err := db.BeginTx(ctx, nil) // in a transaction: the master
	if err != nil {
		t.Fatal(err)
	}
	if id, c := sessionCipher(t, ctx, tx); id != 1 || c == "" {
		t.Fatalf("master session: server %d cipher %q, want 1 over TLS", id, c)
	}
	tx.Rollback()
	await(t, ctx, "a read on the replica (health checked over TLS)", func() bool {
		id, c := sessionCipher(t, ctx, db)
		if id == 2 && c == "" {
			t.Fatal("replica session in the clear")
		}
		return id == 2
	})

	// A MariaDB without TLS: neither the login (mysql.user) nor a backend.
	plain := startInstances(t, 1)[0]
	pp := serveProxy(t, 1, masterView(plain), Linearizable, tlsStore(t, mt, []string{plain.Addr()}), opts)
	if err := appDB(t, pp.addr, "", false).PingContext(ctx); err == nil {
		t.Fatal("login through a MariaDB without TLS worked")
	}
	// The login's store in TLS, the session's backend too: refused.
	pb := serveProxy(t, 1, masterView(plain), Linearizable, tlsStore(t, mt, authAddrs), opts)
	if err := appDB(t, pb.addr, "", false).PingContext(ctx); err == nil {
		t.Fatal("session to a MariaDB without TLS worked")
	}
	// Another CA's proxy: MariaDB's certificate is not accepted.
	mo := loadMaterial(t, proxyFiles(other, 1))
	po := serveProxy(t, 1, masterView(m), Linearizable, tlsStore(t, mt, authAddrs), func(c *Config) { c.MySQLTLS = mo })
	if err := appDB(t, po.addr, "", false).PingContext(ctx); err == nil {
		t.Fatal("session to a MariaDB of another CA worked")
	}
}
