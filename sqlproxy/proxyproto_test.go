package sqlproxy

import (
	"context"
	"database/sql"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	dto "github.com/prometheus/client_model/go"

	"phxgo/binlogd/mtls/mtlstest"
	"phxgo/binlogd/mysqld"
)

// PROXY protocol tests (proxyproto.go): MariaDB applies the client's own
// account, judged by its real address, not the proxy's. Clients bind
// their side to other loopback addresses (127.0.0.2, 127.0.0.3); the
// proxy dials MariaDB from 127.0.0.1, which instances list in
// proxy_protocol_networks (startInstancesOpts).

// fromDB opens a one-connection pool as user through addr whose
// connections come from the local address src.
func fromDB(t *testing.T, addr, user, pw, src string) *sql.DB {
	t.Helper()
	db := clientDB(t, addr, user, pw, "", func(c *mysql.Config) {
		d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		c.DialFunc = d.DialContext
	})
	db.SetMaxOpenConns(1)
	return db
}

// whoami is CURRENT_USER() (the account MariaDB applies) and USER()
// (who it thinks connected).
func whoami(t *testing.T, db *sql.DB) (current, user string, err error) {
	t.Helper()
	err = db.QueryRowContext(context.Background(), "SELECT CURRENT_USER(), USER()").Scan(&current, &user)
	return current, user, err
}

func rootExec(t *testing.T, m *mysqld.Instance, stmts ...string) {
	t.Helper()
	db, err := m.DB("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range append([]string{"SET SESSION sql_log_bin=0"}, stmts...) {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// TestProxyProtocolEscalation is session 37's red-team case: hv@'%' may
// only SELECT, hv@'127.0.0.1' may do anything, one password. A client
// from 127.0.0.2 gets hv@'%' through the proxy (it could DELETE when
// MariaDB judged the proxy's 127.0.0.1), one from 127.0.0.1 the ALL row;
// by TCP (a proxy reaching its MariaDB over the network) and with the
// node's unix socket configured (master's own proxy).
func TestProxyProtocolEscalation(t *testing.T) {
	m := startInstances(t, 1)[0]
	rootExec(t, m,
		"CREATE DATABASE IF NOT EXISTS hvdb", "CREATE TABLE hvdb.t (id INT PRIMARY KEY)", "INSERT INTO hvdb.t VALUES (1), (2), (3)",
		"CREATE USER hv@'%' IDENTIFIED BY 'hvpw'", "GRANT SELECT ON hvdb.* TO hv@'%'",
		"CREATE USER hv@'127.0.0.1' IDENTIFIED BY 'hvpw'", "GRANT ALL ON hvdb.* TO hv@'127.0.0.1'")
	for _, path := range []struct{ name, socket string }{{"tcp", ""}, {"socket", m.Socket()}} {
		p := startProxy(t, 1, masterView(m), Linearizable, []string{m.Addr()}, func(c *Config) { c.MySQLSocket = path.socket })
		other := fromDB(t, p.addr, "hv", "hvpw", "127.0.0.2")
		cur, user, err := whoami(t, other)
		if err != nil || cur != "hv@%" {
			t.Fatalf("%s: from 127.0.0.2: CURRENT_USER() = %q (USER() %q, %v), want hv@%%", path.name, cur, user, err)
		}
		_, err = other.Exec("DELETE FROM hvdb.t WHERE id = 1")
		if err == nil {
			t.Fatalf("%s: a client from 127.0.0.2 deleted with hv@'127.0.0.1's privileges", path.name)
		}
		if me := mysqlErr(t, err); me.Number != 1142 {
			t.Fatalf("%s: DELETE from 127.0.0.2: %v, want 1142", path.name, err)
		}
		var n int
		if err := other.QueryRow("SELECT COUNT(*) FROM hvdb.t").Scan(&n); err != nil || n != 3 {
			t.Fatalf("%s: SELECT from 127.0.0.2: %d, %v", path.name, n, err)
		}
		local := fromDB(t, p.addr, "hv", "hvpw", "127.0.0.1")
		if cur, user, err := whoami(t, local); err != nil || cur != "hv@127.0.0.1" {
			t.Fatalf("%s: from 127.0.0.1: CURRENT_USER() = %q (USER() %q, %v), want hv@127.0.0.1", path.name, cur, user, err)
		}
		if _, err := local.Exec("DELETE FROM hvdb.t WHERE id = 99"); err != nil {
			t.Fatalf("%s: DELETE from 127.0.0.1 (ALL): %v", path.name, err)
		}
	}
}

// TestProxyProtocolHostRestricted: an account for one address
// (app3@'127.0.0.3') logs in through the proxy from there and MariaDB
// sees it so; from anywhere else it is refused. A 'localhost' account
// works for a loopback client by TCP too (the header's AF_UNIX form),
// where MariaDB with skip-name-resolve would refuse 127.0.0.1.
func TestProxyProtocolHostRestricted(t *testing.T) {
	m := startInstances(t, 1)[0]
	rootExec(t, m,
		"CREATE USER app3@'127.0.0.3' IDENTIFIED BY 'pw3'", "GRANT SELECT ON mysql.db TO app3@'127.0.0.3'",
		"CREATE USER lo@'localhost' IDENTIFIED BY 'lopw'")
	for _, path := range []struct{ name, socket string }{{"tcp", ""}, {"socket", m.Socket()}} {
		p := startProxy(t, 1, masterView(m), Linearizable, []string{m.Addr()}, func(c *Config) { c.MySQLSocket = path.socket })
		cur, user, err := whoami(t, fromDB(t, p.addr, "app3", "pw3", "127.0.0.3"))
		if err != nil || cur != "app3@127.0.0.3" || user != "app3@127.0.0.3" {
			t.Fatalf("%s: from 127.0.0.3: CURRENT_USER() %q USER() %q, %v", path.name, cur, user, err)
		}
		for _, src := range []string{"127.0.0.1", "127.0.0.2"} {
			_, _, err := whoami(t, fromDB(t, p.addr, "app3", "pw3", src))
			if err == nil {
				t.Fatalf("%s: app3 logged in from %s", path.name, src)
			}
			if me := mysqlErr(t, err); me.Number != 1045 {
				t.Fatalf("%s: app3 from %s: %v, want 1045", path.name, src, err)
			}
		}
		if cur, _, err := whoami(t, fromDB(t, p.addr, "lo", "lopw", "127.0.0.2")); err != nil || cur != "lo@localhost" {
			t.Fatalf("%s: lo@localhost from 127.0.0.2: CURRENT_USER() %q, %v", path.name, cur, err)
		}
	}
}

// TestProxyProtocolPool: two clients of one user from different
// addresses never share a backend connection (each keeps seeing its own
// address in USER()), while a client coming back from the same address
// does get the pooled one.
func TestProxyProtocolPool(t *testing.T) {
	m := startInstances(t, 1)[0]
	rootExec(t, m, "CREATE USER pu@'%' IDENTIFIED BY 'pupw'")
	p := startProxy(t, 1, masterView(m), Linearizable, []string{m.Addr()}, func(c *Config) { c.Hold = 0 })
	conn := func(src string) (user string, id int64) {
		db := fromDB(t, p.addr, "pu", "pupw", src)
		defer db.Close()
		if err := db.QueryRow("SELECT USER(), CONNECTION_ID()").Scan(&user, &id); err != nil {
			t.Fatalf("from %s: %v", src, err)
		}
		return user, id
	}
	seen := map[int64]string{}
	for i := range 6 {
		src := []string{"127.0.0.2", "127.0.0.3"}[i%2]
		user, id := conn(src)
		if user != "pu@"+src {
			t.Fatalf("client from %s: MariaDB saw %s", src, user)
		}
		if prev, ok := seen[id]; ok && prev != src {
			t.Fatalf("backend connection %d served %s, then %s", id, prev, src)
		}
		seen[id] = src
		// The proxy puts the backend back after it has answered, so
		// the next client may arrive first: wait for it to be idle.
		waitIdleBackends(t, p.srv, min(i+1, 2))
	}
	if len(seen) != 2 {
		t.Fatalf("6 sequential clients from 2 addresses used %d backend connections, want 2 (pooled per address): %v", len(seen), seen)
	}
}

// TestProxyProtocolRefused: a MariaDB that does not list the proxy
// (an older binlogd): a user whose row for the proxy's address is the
// client's logs in without the header; one whose row there grants
// something else is refused with 1045, never logged in as that row. Over
// TLS too, where MariaDB's refusal comes in place of the TLS handshake.
func TestProxyProtocolRefused(t *testing.T) {
	m := startInstances(t, 1)[0]
	rootExec(t, m,
		"CREATE USER one@'%' IDENTIFIED BY 'onepw'",
		"CREATE USER hv@'%' IDENTIFIED BY 'hvpw'",
		"CREATE USER hv@'127.0.0.1' IDENTIFIED BY 'hvpw'", "GRANT ALL ON *.* TO hv@'127.0.0.1'",
		"SET GLOBAL proxy_protocol_networks=''")
	met := NewMetrics(nil)
	p := startProxy(t, 1, masterView(m), Linearizable, []string{m.Addr()}, func(c *Config) { c.Metrics = met })
	if cur, _, err := whoami(t, fromDB(t, p.addr, "one", "onepw", "127.0.0.2")); err != nil || cur != "one@%" {
		t.Fatalf("one@'%%' without the header: %q, %v", cur, err)
	}
	_, _, err := whoami(t, fromDB(t, p.addr, "hv", "hvpw", "127.0.0.2"))
	if err == nil {
		t.Fatal("hv from 127.0.0.2 logged in although MariaDB would apply hv@'127.0.0.1'")
	}
	if me := mysqlErr(t, err); me.Number != 1045 || !strings.Contains(me.Message, "PROXY header") {
		t.Fatalf("hv from 127.0.0.2: %v", err)
	}
	if cur, _, err := whoami(t, fromDB(t, p.addr, "hv", "hvpw", "127.0.0.1")); err != nil || cur != "hv@127.0.0.1" {
		t.Fatalf("hv from 127.0.0.1 (its row is the proxy's): %q, %v", cur, err)
	}
	count := func(outcome string) float64 {
		var d dto.Metric
		if err := met.headerRefused.WithLabelValues(outcome).Write(&d); err != nil {
			t.Fatal(err)
		}
		return d.GetCounter().GetValue()
	}
	fb, den := count("fallback"), count("denied")
	if fb != 2 || den != 1 {
		t.Fatalf("refusals counted: fallback %v denied %v, want 2 and 1", fb, den)
	}
}

// TestProxyProtocolTLS: the header goes in front of the SSLRequest of a
// login in TLS (Config.MySQLTLS); MariaDB applies the client's row, and
// a MariaDB that refuses the header (its ERR comes in place of the TLS
// handshake) is told from a broken handshake: fallback or 1045 as in
// the clear.
func TestProxyProtocolTLS(t *testing.T) {
	ca := mtlstest.MakeCA(t, 1)
	m := startInstancesOpts(t, 1, func(id uint32) mysqld.Options {
		f := mtlstest.Files(ca, int(id))
		return mysqld.Options{TLS: mysqld.TLSFiles{Cert: f.Cert, Key: f.Key, CA: f.CA}}
	})[0]
	rootExec(t, m,
		"CREATE USER one@'%' IDENTIFIED BY 'onepw'",
		"CREATE USER hv@'%' IDENTIFIED BY 'hvpw'",
		"CREATE USER hv@'127.0.0.1' IDENTIFIED BY 'hvpw'", "GRANT ALL ON *.* TO hv@'127.0.0.1'")
	mt := loadMaterial(t, proxyFiles(ca, 1))
	p := serveProxy(t, 1, masterView(m), Linearizable, tlsStore(t, mt, []string{m.Addr()}), func(c *Config) { c.MySQLTLS = mt })
	ctx := context.Background()
	db := fromDB(t, p.addr, "hv", "hvpw", "127.0.0.2")
	if cur, user, err := whoami(t, db); err != nil || cur != "hv@%" || user != "hv@127.0.0.2" {
		t.Fatalf("hv from 127.0.0.2 over TLS: CURRENT_USER() %q USER() %q, %v", cur, user, err)
	}
	if _, c := sessionCipher(t, ctx, db); c == "" {
		t.Fatal("backend session in the clear")
	}
	rootExec(t, m, "SET GLOBAL proxy_protocol_networks=''")
	_, _, err := whoami(t, fromDB(t, p.addr, "hv", "hvpw", "127.0.0.3"))
	if err == nil {
		t.Fatal("hv from 127.0.0.3 logged in although MariaDB would apply hv@'127.0.0.1'")
	}
	if me := mysqlErr(t, err); me.Number != 1045 || !strings.Contains(me.Message, "PROXY header") {
		t.Fatalf("hv from 127.0.0.3, header refused over TLS: %v", err)
	}
	one := fromDB(t, p.addr, "one", "onepw", "127.0.0.3")
	if cur, _, err := whoami(t, one); err != nil || cur != "one@%" {
		t.Fatalf("one@'%%' over TLS without the header: %q, %v", cur, err)
	}
	if _, c := sessionCipher(t, ctx, one); c == "" {
		t.Fatal("fallback session in the clear")
	}
}

// waitIdleBackends waits until srv's pool holds want idle backend
// connections in all.
func waitIdleBackends(t *testing.T, srv *Server, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := 0
		for _, c := range srv.pool.counts() {
			n += c
		}
		if n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pool holds %d idle backend connections, want %d", n, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
