package sqlproxy

import (
	"context"
	"crypto/sha1"
	"database/sql"
	"testing"

	"github.com/go-sql-driver/mysql"

	"phxgo/sqlproxy/auth"
	"phxgo/sqlproxy/internal/fakebackend"
	"phxgo/sqlproxy/topology"
	"phxgo/sqlproxy/wire"
)

// Tests against in-process fake MariaDBs (package fakebackend): the
// proxy, its routing and its transaction state are real; the backends
// and the credential store are not.

const (
	fakeUser = "app"
	fakePass = "app-secret"
)

// staticAuth is an Authenticator with one account, any host.
type staticAuth struct{ user, pass string }

func (a staticAuth) Verify(_ context.Context, user string, _ auth.Client, salt, token []byte) (auth.Account, error) {
	if user != a.user {
		return auth.Account{}, auth.ErrDenied
	}
	s1 := sha1.Sum([]byte(a.pass))
	s2 := sha1.Sum(s1[:])
	stage1, ok := wire.Stage1FromToken(salt, token, s2[:])
	if !ok {
		return auth.Account{}, auth.ErrDenied
	}
	return auth.Account{Stage1: stage1, Host: "%"}, nil
}

// startFakes starts n fake MariaDBs (server ids 1..n) with the app
// account and database app; the first is writable, the others read-only.
func startFakes(t *testing.T, n int) []*fakebackend.Server {
	t.Helper()
	var out []*fakebackend.Server
	for i := 1; i <= n; i++ {
		f, err := fakebackend.Start(uint32(i))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		f.Users = map[string]string{fakeUser: fakePass}
		mustFake(t, f, "CREATE DATABASE app")
		f.SetReadOnly(i > 1)
		out = append(out, f)
	}
	return out
}

func mustFake(t *testing.T, f *fakebackend.Server, sql string) [][]*string {
	t.Helper()
	rows, err := f.Exec(sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return rows
}

// startFakeProxy serves mode on a loopback port with a static topology
// and the fake account.
func startFakeProxy(t *testing.T, self uint32, v topology.View, mode Mode, tweak func(*Config)) *testProxy {
	t.Helper()
	return serveProxy(t, self, v, mode, staticAuth{fakeUser, fakePass}, tweak)
}

// fakeDB opens a client pool through addr. The fakes have no prepared
// statements: arguments are interpolated by the driver.
func fakeDB(t *testing.T, addr, dbname string) *sql.DB {
	t.Helper()
	return clientDB(t, addr, fakeUser, fakePass, dbname, func(c *mysql.Config) { c.InterpolateParams = true })
}

// fakeConn is one client connection through addr.
func fakeConn(t *testing.T, ctx context.Context, addr string) *sql.Conn {
	t.Helper()
	c, err := fakeDB(t, addr, "app").Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func execOK(t *testing.T, ctx context.Context, c interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, q string, args ...any) {
	t.Helper()
	if _, err := c.ExecContext(ctx, q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func wantSQLErr(t *testing.T, err error, code uint16, state string) {
	t.Helper()
	if me := mysqlErr(t, err); me.Number != code || string(me.SQLState[:]) != state {
		t.Fatalf("want %d/%s, got %v", code, state, me)
	}
}

// TestFakeBackendSmoke: the proxy logs in to a fake, runs statements,
// and its transaction state follows the fake's status flags.
func TestFakeBackendSmoke(t *testing.T) {
	fs := startFakes(t, 1)
	m := fs[0]
	ctx := context.Background()
	p := startFakeProxy(t, 1, masterView(m), Linearizable, nil)
	db := fakeDB(t, p.addr, "app")
	execOK(t, ctx, db, "CREATE TABLE kv (k INT PRIMARY KEY, v VARCHAR(64))")
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	execOK(t, ctx, tx, "INSERT INTO kv VALUES (1,'a'),(2,'b')")
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	tx, _ = db.BeginTx(ctx, nil)
	execOK(t, ctx, tx, "INSERT INTO kv VALUES (?, ?)", 3, "c")
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM kv").Scan(&n); err != nil || n != 1 {
		t.Fatalf("count=%d err=%v", n, err)
	}
	var v string
	if err := db.QueryRowContext(ctx, "SELECT v FROM kv WHERE k = ?", 3).Scan(&v); err != nil || v != "c" {
		t.Fatalf("v=%q err=%v", v, err)
	}
	if id := serverID(t, db, "SELECT @@server_id"); id != 1 {
		t.Fatalf("server_id %d", id)
	}
}
