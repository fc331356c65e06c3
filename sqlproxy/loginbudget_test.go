package sqlproxy

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"phxgo/binlogd/mysqld"
)

// TestLoginFailureBudget (real MariaDB): after its budget of failed
// logins a client address is refused with 1129 before its password is
// checked, even the right one, and the metric counts it; another address,
// and another user from the same address, still log in. Without the budget a stranger could guess passwords as
// fast as the proxy answers.
func TestLoginFailureBudget(t *testing.T) {
	a := startInstances(t, 1)[0]
	execRoot(t, a, "CREATE USER 'other'@'%' IDENTIFIED BY 'other-secret-pw'")
	p := startProxy(t, 1, masterView(a), Linearizable, []string{a.Addr()}, func(c *Config) {
		c.LoginFailureBurst, c.LoginFailureEvery = 3, time.Hour
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	acc := mysqld.DefaultAccounts()
	from := func(ip, pw string) error {
		netName := "tcp-from-" + ip
		mysql.RegisterDialContext(netName, func(ctx context.Context, addr string) (net.Conn, error) {
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
			return d.DialContext(ctx, "tcp", addr)
		})
		db := clientDB(t, p.addr, acc.AppUser, pw, "", func(c *mysql.Config) { c.Net = netName })
		return db.PingContext(ctx)
	}

	for i := range 3 {
		err := from("127.0.0.1", "wrong-password")
		if me := mysqlErr(t, err); me.Number != 1045 {
			t.Fatalf("failure %d: error %d, want 1045", i+1, me.Number)
		}
	}
	err := from("127.0.0.1", acc.AppPassword)
	if err == nil {
		t.Fatal("the right password got in past the budget of failures")
	}
	if me := mysqlErr(t, err); me.Number != 1129 {
		t.Fatalf("past the budget: %v, want 1129", err)
	}
	if n := refused(t, p, "login_failures"); n != 1 {
		t.Fatalf("refused{login_failures} = %v", n)
	}
	if err := from("127.0.0.2", acc.AppPassword); err != nil {
		t.Fatalf("another address: %v", err)
	}
	// Another account from the same address is not locked out by the
	// guesses at app's password (red-team test, session 38).
	otherDB := clientDB(t, p.addr, "other", "other-secret-pw", "", func(*mysql.Config) {})
	if err := otherDB.PingContext(ctx); err != nil {
		t.Fatalf("another user from the blocked address: %v", err)
	}
}
