package sqlproxy

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"phxgo/binlogd/mtls"
	"phxgo/binlogd/mtls/mtlstest"
	"phxgo/binlogd/mysqld"
	"phxgo/sqlproxy/topology"
	"phxgo/sqlproxy/wire"
)

// userDB opens a single-connection pool as user through addr.
func userDB(t *testing.T, addr, user, pw, attrs string) *sql.DB {
	t.Helper()
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr = user, pw, "tcp", addr
	cfg.Timeout = 5 * time.Second
	cfg.ConnectionAttributes = attrs
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	db.SetMaxIdleConns(0)
	t.Cleanup(func() { db.Close() })
	return db
}

// execRoot runs statements on inst directly (not through a proxy).
func execRoot(t *testing.T, inst *mysqld.Instance, stmts ...string) {
	t.Helper()
	db, err := inst.DB("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func wantDenied(t *testing.T, db *sql.DB, what string) {
	t.Helper()
	err := db.PingContext(context.Background())
	if err == nil {
		t.Fatalf("%s: logged in", what)
	}
	if me := mysqlErr(t, err); me.Number != 1045 || !strings.HasPrefix(me.Message, "Access denied for user") {
		t.Fatalf("%s: got %v, want MariaDB's 1045 Access denied", what, me)
	}
}

// TestDeniedAccounts is the attack "log in through the proxy as root or
// as phxgo's own accounts, or as an account that has no password hash":
// each gets MariaDB's 1045, and denied names are counted.
func TestDeniedAccounts(t *testing.T) {
	a := startInstances(t, 1)[0]
	execRoot(t, a,
		"CREATE USER 'phxgo_admin'@'%' IDENTIFIED BY 'admin-secret'",
		"GRANT ALL ON *.* TO 'phxgo_admin'@'%'",
		"CREATE USER 'sock'@'%' IDENTIFIED VIA unix_socket",
		"CREATE USER 'nopw'@'%'",
		"CREATE ROLE 'rolename'",
		"CREATE USER 'carol'@'%' IDENTIFIED BY 'carol-secret'",
	)
	p := startProxy(t, 1, masterView(a), Linearizable, []string{a.Addr()}, func(c *Config) { c.AdminUser = adminUser })
	acc := mysqld.DefaultAccounts()
	for _, tc := range []struct{ user, pw string }{
		{"root", ""}, {"root", "x"}, {"root ", ""}, {"phxgo_admin", "admin-secret"},
		{acc.CaptureUser, acc.CapturePassword}, {adminUser, adminPass}, {"mariadb.sys", ""}, {"mysql", ""},
	} {
		wantDenied(t, userDB(t, p.addr, tc.user, tc.pw, ""), "as "+tc.user)
	}
	if n := refused(t, p, "denied_user"); n != 8 {
		t.Fatalf("refused denied_user = %v, want 8", n)
	}
	// The finding as reported: the mariadb CLI as root without a password.
	if cli, err := exec.LookPath("mariadb"); err == nil {
		host, port, _ := strings.Cut(p.addr, ":")
		out, err := exec.Command(cli, "-h", host, "-P", port, "-uroot", "-e", "SELECT CURRENT_USER()").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "ERROR 1045 (28000): Access denied for user 'root'@'127.0.0.1' (using password: NO)") {
			t.Fatalf("mariadb -uroot through the proxy: %v\n%s", err, out)
		}
	}
	// No native hash: never logged in, least of all with an empty token.
	for _, u := range []string{"sock", "nopw", "rolename"} {
		wantDenied(t, userDB(t, p.addr, u, "", ""), "as "+u)
	}
	if err := userDB(t, p.addr, "carol", "carol-secret", "").Ping(); err != nil {
		t.Fatalf("an ordinary account: %v", err)
	}
	// A narrower deny list lets phxgo_admin through (its real password).
	q := startProxy(t, 1, masterView(a), Linearizable, []string{a.Addr()}, func(c *Config) { c.DenyUsers = []string{"root"} })
	if err := userDB(t, q.addr, "phxgo_admin", "admin-secret", "").Ping(); err != nil {
		t.Fatalf("phxgo_admin with -deny-users=root: %v", err)
	}
	if _, err := ParseDenyUsers("a*b"); err == nil {
		t.Fatal("a '*' inside a name accepted")
	}
}

// TestHostRules: 'bob'@'10.9.9.9' does not let bob in from loopback;
// once 'bob'@'127.0.0.1' exists he gets in. A client claiming another
// address in connection attributes is judged by its real one.
func TestHostRules(t *testing.T) {
	a := startInstances(t, 1)[0]
	execRoot(t, a, "CREATE USER 'bob'@'10.9.9.9' IDENTIFIED BY 'bob-secret'", "GRANT SELECT ON *.* TO 'bob'@'10.9.9.9'")
	p := startProxy(t, 1, masterView(a), Linearizable, []string{a.Addr()}, nil)
	wantDenied(t, userDB(t, p.addr, "bob", "bob-secret", ""), "bob from 127.0.0.1 with only bob@10.9.9.9")
	wantDenied(t, userDB(t, p.addr, "bob", "bob-secret", hopAttr+":1,"+clientAttr+":10.9.9.9"), "bob forging a hop from 10.9.9.9")

	execRoot(t, a, "CREATE USER 'bob'@'127.0.0.1' IDENTIFIED BY 'bob-secret'", "GRANT SELECT ON *.* TO 'bob'@'127.0.0.1'")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	db := userDB(t, p.addr, "bob", "bob-secret", "")
	await(t, ctx, "bob@127.0.0.1 logs in", func() bool { return db.PingContext(ctx) == nil })
	var user string
	if err := db.QueryRowContext(ctx, "SELECT CURRENT_USER()").Scan(&user); err != nil || user != "bob@127.0.0.1" {
		t.Fatalf("CURRENT_USER() = %q, %v", user, err)
	}
}

// TestHopCarriesClient: the forwarding hop reports the original client's
// address, and the master's proxy trusts it only on a TLS hop with a
// cluster certificate. Node 2's proxy dials from 127.0.0.2; bob exists
// only @'127.0.0.1', where the client is.
func TestHopCarriesClient(t *testing.T) {
	a := startInstances(t, 1)[0]
	execRoot(t, a, "CREATE USER 'bob'@'127.0.0.1' IDENTIFIED BY 'bob-secret'", "GRANT SELECT ON *.* TO 'bob'@'127.0.0.1'")
	ca := mtlstest.MakeCA(t, 2)
	authAddrs := []string{a.Addr()}
	start := func(tls bool) (master, fwd *testProxy) {
		master = startProxy(t, 1, withMembers(masterView(a), 2), Linearizable, authAddrs, func(c *Config) {
			if tls {
				c.PeerTLS = loadMaterial(t, proxyFiles(ca, 1))
			}
		})
		v := topology.View{MasterID: 1, MasterProxyAddr: master.addr, MasterMySQLAddr: a.Addr(), SelfMySQLAddr: a.Addr()}
		fwd = startProxy(t, 2, v, Linearizable, authAddrs, func(c *Config) {
			c.SourceIP = net.ParseIP("127.0.0.2")
			if tls {
				c.PeerTLS = loadMaterial(t, proxyFiles(ca, 2))
			}
		})
		return master, fwd
	}
	_, fwd := start(true)
	db := userDB(t, fwd.addr, "bob", "bob-secret", "")
	if id := serverID(t, db, "SELECT @@server_id"); id != 1 {
		t.Fatalf("ran on %d", id)
	}
	// In the clear the hop's claim is ignored: the master judges the
	// forwarding proxy's own address, 127.0.0.2, which bob lacks.
	_, fwd = start(false)
	wantDenied(t, userDB(t, fwd.addr, "bob", "bob-secret", ""), "bob over an unverified hop")
}

// rawConn dials addr and reads the greeting (or a pre-greeting error).
func rawConn(t *testing.T, addr string) (*wire.Conn, []byte) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(20 * time.Second))
	c := wire.NewConn(nc)
	p, err := c.ReadPacket()
	if err != nil {
		t.Fatalf("greeting: %v", err)
	}
	return c, p
}

// TestConnectionCap: strangers that never log in give way, oldest
// first, to a new connection; with MaxConnections logged in, one more
// gets MariaDB's 1040; a stranger is dropped after LoginTimeout.
func TestConnectionCap(t *testing.T) {
	a := startFakes(t, 1)[0]
	p := startFakeProxy(t, 1, masterView(a), Linearizable, func(c *Config) {
		c.MaxConnections, c.LoginTimeout = 2, 2*time.Second
	})
	c1, _ := rawConn(t, p.addr)
	c2, _ := rawConn(t, p.addr)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	held := fakeDB(t, p.addr, "")
	held.SetMaxIdleConns(2)
	if err := held.PingContext(ctx); err != nil {
		t.Fatalf("a client behind two silent strangers: %v", err)
	}
	if _, err := c1.ReadPacket(); err == nil {
		t.Fatal("the oldest stranger was not dropped for the client")
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("oldest stranger dropped after %v: by the login timeout, not for the client", d)
	}
	// c2 still waits; a second client evicts it. Then both slots are
	// logged in and the next one is refused.
	conns := make([]*sql.Conn, 0, 2)
	for range 2 {
		cn, err := held.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := cn.PingContext(ctx); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, cn)
	}
	if _, err := c2.ReadPacket(); err == nil {
		t.Fatal("the second stranger was not dropped")
	}
	err := fakeDB(t, p.addr, "").Ping()
	if me := mysqlErr(t, err); me.Number != 1040 || me.Message != "Too many connections" {
		t.Fatalf("over the cap of logged-in clients: %v", me)
	}
	if n := refused(t, p, "max_connections"); n < 1 {
		t.Fatalf("refused max_connections = %v", n)
	}
	for _, cn := range conns {
		cn.Close()
	}
	// A stranger alone is dropped after LoginTimeout.
	c3, _ := rawConn(t, p.addr)
	start = time.Now()
	if _, err := c3.ReadPacket(); err == nil {
		t.Fatal("an idle stranger was not dropped")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("stranger dropped after %v", d)
	}
}

// TestPacketBounds: before login a packet over wire.MaxHandshakePacket,
// after login one over max_allowed_packet, gets 1153 and the connection
// is closed; the proxy serves on.
func TestPacketBounds(t *testing.T) {
	a := startFakes(t, 1)[0]
	p := startFakeProxy(t, 1, masterView(a), Linearizable, func(c *Config) { c.MaxAllowedPacket = 4096 })
	c, _ := rawConn(t, p.addr)
	if _, err := c.Conn.Write([]byte{0xff, 0xff, 0xff, 1}); err != nil { // announces 16 MiB
		t.Fatal(err)
	}
	pkt, err := c.ReadPacket()
	if err != nil {
		t.Fatal(err)
	}
	if e := wire.ParseError(pkt); e.Code != 1153 {
		t.Fatalf("pre-login 16 MiB header: %v", e)
	}
	if _, err := c.ReadPacket(); err == nil {
		t.Fatal("connection left open")
	}

	db := fakeDB(t, p.addr, "")
	db.SetMaxOpenConns(1)
	_, err = db.Exec("SELECT '" + strings.Repeat("x", 5000) + "'")
	if me := mysqlErr(t, err); me.Number != 1153 {
		t.Fatalf("over max_allowed_packet: %v", me)
	}
	if id := serverID(t, fakeDB(t, p.addr, ""), "SELECT @@server_id"); id != 1 {
		t.Fatal(id)
	}
}

// TestSessionPanic: a panic inside one session (a test hook) closes that
// client only; another client keeps working and the panic is counted.
func TestSessionPanic(t *testing.T) {
	a := startFakes(t, 1)[0]
	p := startFakeProxy(t, 1, masterView(a), Linearizable, func(c *Config) {
		c.Knobs = &Knobs{OnCommand: func(pkt []byte) {
			if strings.Contains(string(pkt), "boom") {
				panic("test: boom")
			}
		}}
	})
	ctx := context.Background()
	other := fakeDB(t, p.addr, "")
	oc, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer oc.Close()
	if err := oc.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	victim := fakeDB(t, p.addr, "")
	_, err = victim.ExecContext(ctx, "SELECT 'boom'")
	if err == nil || !(errors.Is(err, mysql.ErrInvalidConn) || strings.Contains(err.Error(), "EOF") || strings.Contains(err.Error(), "bad connection")) {
		t.Fatalf("panicking session: %v", err)
	}
	if id := serverID(t, oc, "SELECT @@server_id"); id != 1 {
		t.Fatal(id)
	}
	if id := serverID(t, victim, "SELECT @@server_id"); id != 1 {
		t.Fatal("a new connection after the panic:", id)
	}
	if n := counter(t, p, "phxgo_sqlproxy_session_panics_total"); n != 1 {
		t.Fatalf("session panics = %v", n)
	}
}

// counter reads an unlabelled counter from the proxy's registry.
func counter(t *testing.T, p *testProxy, name string) float64 {
	t.Helper()
	mfs, err := p.srv.metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.Metric) > 0 {
			return mf.Metric[0].Counter.GetValue()
		}
	}
	return 0
}

// TestSocketOnlyForTheSameAccount: with Config.MySQLSocket, MariaDB
// judges a socket login as user@localhost. A client whose own account is
// another row (here a remote client, reported by a verified hop) must
// not get localhost's privileges: its session goes over TCP.
func TestSocketOnlyForTheSameAccount(t *testing.T) {
	a := startInstances(t, 1)[0]
	execRoot(t, a,
		"CREATE USER 'dave'@'localhost' IDENTIFIED BY 'dave-secret'", "GRANT ALL ON *.* TO 'dave'@'localhost'",
		"CREATE USER 'dave'@'%' IDENTIFIED BY 'dave-secret'", "GRANT SELECT ON mysql.* TO 'dave'@'%'")
	ca := mtlstest.MakeCA(t, 2)
	p := startProxy(t, 1, withMembers(masterView(a), 2), Linearizable, []string{a.Addr()}, func(c *Config) {
		c.MySQLSocket = a.Socket()
		c.PeerTLS = loadMaterial(t, proxyFiles(ca, 1))
	})
	current := func(db *sql.DB) string {
		t.Helper()
		var u string
		if err := db.QueryRow("SELECT CURRENT_USER()").Scan(&u); err != nil {
			t.Fatal(err)
		}
		return u
	}
	if u := current(userDB(t, p.addr, "dave", "dave-secret", "")); u != "dave@localhost" {
		t.Fatalf("a local client: %s", u)
	}
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.Timeout = "dave", "dave-secret", "tcp", p.addr, 5*time.Second
	cfg.TLS = loadMaterial(t, proxyFiles(ca, 2)).ClientFor(p.addr, mtls.ExpectProxy(1))
	cfg.ConnectionAttributes = hopAttr + ":1," + clientAttr + ":10.0.0.5"
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hop := sql.OpenDB(c)
	defer hop.Close()
	if u := current(hop); u != "dave@%" {
		t.Fatalf("a remote client (verified hop from 10.0.0.5): %s, want dave@%%", u)
	}
}
