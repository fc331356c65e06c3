package sqlproxy

import (
	"context"
	"crypto/tls"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"phxgo/binlogd/mtls/mtlstest"
	"phxgo/binlogd/mysqld"
	"phxgo/sqlproxy/auth"
)

// TestRequireSSLThroughProxy is the red-team finding of session 37: an
// account created REQUIRE SSL logged in with a plaintext client through a
// proxy whose own link to MariaDB was TLS (MariaDB judged that link).
// The proxy now requires the client's TLS for such an account, and only
// for it; if its mysql.user reads cannot see ssl_type (a server whose
// binlogd predates the column grant) every account requires TLS.
func TestRequireSSLThroughProxy(t *testing.T) {
	ca := mtlstest.MakeCA(t, 1)
	m := startInstancesOpts(t, 1, func(id uint32) mysqld.Options {
		f := mtlstest.Files(ca, int(id))
		return mysqld.Options{TLS: mysqld.TLSFiles{Cert: f.Cert, Key: f.Key, CA: f.CA}}
	})[0]
	execRoot(t, m,
		"SET SESSION sql_log_bin=0",
		"CREATE USER 'sec_ssl'@'%' IDENTIFIED BY 'ssl-secret' REQUIRE SSL",
		"GRANT SELECT ON test.* TO 'sec_ssl'@'%'",
		// sqlproxy's account as a binlogd before session 37 granted it.
		"CREATE USER 'old_proxy'@'%' IDENTIFIED BY 'old-secret'",
		"GRANT SELECT (Host, User, plugin, authentication_string, password_expired, is_role) ON mysql.user TO 'old_proxy'@'%'")
	mt := loadMaterial(t, proxyFiles(ca, 1))
	authAddrs := []string{m.Addr()}
	opts := func(c *Config) { c.MySQLTLS, c.PeerTLS = mt, mt }
	p := serveProxy(t, 1, masterView(m), Linearizable, tlsStore(t, mt, authAddrs), opts)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	open := func(addr, user, pw string, overTLS bool) *sql.DB {
		return clientDB(t, addr, user, pw, "", func(c *mysql.Config) {
			if overTLS {
				c.TLS = &tls.Config{InsecureSkipVerify: true} // what the test checks is the proxy's rule, not the client's trust
			}
		})
	}
	err := open(p.addr, "sec_ssl", "ssl-secret", false).PingContext(ctx)
	if me := mysqlErr(t, err); me.Number != 1045 || !strings.Contains(me.Message, "requires TLS") {
		t.Fatalf("REQUIRE SSL account in the clear through the proxy: %v", me)
	}
	if n := refused(t, p, "needs_tls"); n != 1 {
		t.Fatalf("needs_tls refusals %v, want 1", n)
	}
	// A wrong password is told nothing about TLS.
	err = open(p.addr, "sec_ssl", "wrong", false).PingContext(ctx)
	if me := mysqlErr(t, err); me.Number != 1045 || strings.Contains(me.Message, "TLS") {
		t.Fatalf("wrong password: %v", me)
	}
	if err := open(p.addr, "sec_ssl", "ssl-secret", true).PingContext(ctx); err != nil {
		t.Fatalf("REQUIRE SSL account over TLS through the proxy: %v", err)
	}
	app := mysqld.DefaultAccounts()
	if err := open(p.addr, app.AppUser, app.AppPassword, false).PingContext(ctx); err != nil {
		t.Fatalf("an account without REQUIRE, in the clear: %v", err)
	}
	// The master's own proxy reaches MariaDB by its unix socket, which
	// MariaDB takes for a login without TLS: such an account goes by TCP
	// in TLS instead (the second red-team pass of session 37 found it
	// could not log in at all).
	ps := serveProxy(t, 1, masterView(m), Linearizable, tlsStore(t, mt, authAddrs), func(c *Config) {
		opts(c)
		c.MySQLSocket = m.Socket()
	})
	var cipher string
	if err := open(ps.addr, "sec_ssl", "ssl-secret", true).QueryRowContext(ctx,
		"SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'SSL_CIPHER'").Scan(&cipher); err != nil || cipher == "" {
		t.Fatalf("REQUIRE SSL account through a proxy with MariaDB's socket: cipher %q, %v", cipher, err)
	}

	// A store that cannot read ssl_type: closed, every account needs TLS.
	old := auth.New(auth.Config{User: "old_proxy", Password: "old-secret", Addrs: func() []string { return authAddrs },
		TLS: func(addr string) *tls.Config { return MySQLClientTLS(mt, addr, NodeIs(1)) }})
	t.Cleanup(func() { old.Close() })
	po := serveProxy(t, 1, masterView(m), Linearizable, old, opts)
	err = open(po.addr, app.AppUser, app.AppPassword, false).PingContext(ctx)
	if me := mysqlErr(t, err); me.Number != 1045 || !strings.Contains(me.Message, "requires TLS") {
		t.Fatalf("plaintext login when ssl_type is unreadable: %v", me)
	}
	if err := open(po.addr, app.AppUser, app.AppPassword, true).PingContext(ctx); err != nil {
		t.Fatalf("TLS login when ssl_type is unreadable: %v", err)
	}
}
