package sqlproxy

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"phxgo/binlogd/mysqld"
	"phxgo/internal/testkit"
	"phxgo/sqlproxy/auth"
	"phxgo/sqlproxy/topology"
)

const (
	adminUser = "phxgo_proxy"
	adminPass = "proxy-secret"
	// testProxyNetworks: the test proxies dial MariaDB from 127.0.0.1.
	testProxyNetworks = "localhost,127.0.0.1"
)

// startInstances starts n MariaDBs (server ids 1..n) with the app and
// proxy-admin accounts; instance 1 is writable (the master).
func startInstances(t *testing.T, n int) []*mysqld.Instance {
	t.Helper()
	return startInstancesOpts(t, n, func(uint32) mysqld.Options { return mysqld.Options{} })
}

// startInstancesOpts is startInstances with each server's options
// (opts(id); Dir, Port and ServerID are filled in).
func startInstancesOpts(t *testing.T, n int, opts func(id uint32) mysqld.Options) []*mysqld.Instance {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out []*mysqld.Instance
	for i := 1; i <= n; i++ {
		o := opts(uint32(i))
		o.ServerID = uint32(i)
		inst := mysqld.NewTestInstanceOpts(t, o)
		db, err := inst.DB("")
		if err != nil {
			t.Fatal(err)
		}
		if err := mysqld.Bootstrap(ctx, db, mysqld.DefaultAccounts()); err != nil {
			t.Fatal(err)
		}
		stmts := []string{
			"SET SESSION sql_log_bin=0",
			"CREATE USER IF NOT EXISTS " + adminUser + "@'%' IDENTIFIED BY '" + adminPass + "'",
			"GRANT SELECT ON mysql.* TO " + adminUser + "@'%'",
			"GRANT SLAVE MONITOR ON *.* TO " + adminUser + "@'%'",
			// What binlogd sets (proxynets.go): the proxies' address, so
			// their PROXY headers are taken (proxyproto.go).
			"SET GLOBAL proxy_protocol_networks='" + testProxyNetworks + "'",
		}
		if i == 1 {
			stmts = append(stmts, "SET GLOBAL read_only=OFF")
		}
		for _, s := range stmts {
			if _, err := db.ExecContext(ctx, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
		db.Close()
		out = append(out, inst)
	}
	return out
}

// masterView is a static view where this node (id 1) is master with a
// lease that lasts for the test.
func masterView[B interface {
	Addr() string
	ServerID() uint32
}](master B, replicas ...B) topology.View {
	v := topology.View{MasterID: 1, MasterMySQLAddr: master.Addr(), SelfMySQLAddr: master.Addr(),
		IsMaster: true, Ready: true, LeaseDeadline: time.Now().Add(time.Hour)}
	for _, r := range replicas {
		v.Replicas = append(v.Replicas, topology.Replica{ID: r.ServerID(), MySQLAddr: r.Addr()})
	}
	return v
}

// withMembers adds nodes ids to v as members (replicas on the master's
// MariaDB, which its read_only=OFF keeps from ever serving a read): a
// proxy takes a hop only from a member's proxy.
func withMembers(v topology.View, ids ...uint32) topology.View {
	for _, id := range ids {
		v.Replicas = append(v.Replicas, topology.Replica{ID: id, MySQLAddr: v.MasterMySQLAddr})
	}
	return v
}

type testProxy struct {
	srv  *Server
	addr string
	topo *topology.Static
}

// startProxy serves mode on a loopback port with a static topology.
func startProxy(t *testing.T, self uint32, v topology.View, mode Mode, authAddrs []string, tweak func(*Config)) *testProxy {
	t.Helper()
	store := auth.New(auth.Config{User: adminUser, Password: adminPass, Addrs: func() []string { return authAddrs }})
	t.Cleanup(func() { store.Close() }) // runs after serveProxy's cleanup
	return serveProxy(t, self, v, mode, store, tweak)
}

// serveProxy serves mode on a loopback port with a static topology and
// the given authenticator until the test ends.
func serveProxy(t *testing.T, self uint32, v topology.View, mode Mode, a Authenticator, tweak func(*Config)) *testProxy {
	t.Helper()
	topo := topology.NewStatic(self, v)
	cfg := DefaultConfig()
	cfg.MasterWait = 300 * time.Millisecond
	if tweak != nil {
		tweak(&cfg)
	}
	srv, err := New(cfg, topo, a)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln, mode) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; !errors.Is(err, ErrClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return &testProxy{srv: srv, addr: ln.Addr().String(), topo: topo}
}

// appDB opens a go-sql-driver pool as the app user through addr, with
// server-side prepared statements (no interpolation).
func appDB(t *testing.T, addr, dbname string, multi bool) *sql.DB {
	t.Helper()
	a := mysqld.DefaultAccounts()
	return clientDB(t, addr, a.AppUser, a.AppPassword, dbname, func(c *mysql.Config) { c.MultiStatements = multi })
}

// clientDB opens a go-sql-driver pool as user through addr.
func clientDB(t *testing.T, addr, user, pw, dbname string, tweak func(*mysql.Config)) *sql.DB {
	t.Helper()
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName = user, pw, "tcp", addr, dbname
	cfg.Timeout = 5 * time.Second
	tweak(cfg)
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	return db
}

func serverID(t *testing.T, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, query string) uint32 {
	t.Helper()
	var id uint32
	if err := q.QueryRowContext(context.Background(), query).Scan(&id); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return id
}

func mysqlErr(t *testing.T, err error) *mysql.MySQLError {
	t.Helper()
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		t.Fatalf("want a MySQL error, got %v", err)
	}
	return me
}

func sqlOpen(dsn string) (*sql.DB, error) { return sql.Open("mysql", dsn) }

// replicate makes replica a plain MariaDB replica of master (GTID,
// capture account) and waits until its threads run. phxgo replicas pull
// from binlogd, not from the master; for the proxy's tests any real
// replication will do.
func replicate(t *testing.T, master, replica *mysqld.Instance) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := replica.DB("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	a := mysqld.DefaultAccounts()
	q := fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='%s', MASTER_PASSWORD='%s', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1",
		master.Port(), a.CaptureUser, a.CapturePassword)
	for _, s := range []string{q, "START SLAVE"} {
		if _, err := db.ExecContext(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	await(t, ctx, "replica threads running", func() bool {
		lag, _, err := replicaLag(ctx, db)
		return err == nil && lag >= 0
	})
}

// await polls cond until it holds or ctx ends (then the test fails).
func await(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	testkit.Await(t, ctx, what, cond)
}
