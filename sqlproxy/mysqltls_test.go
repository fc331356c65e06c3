package sqlproxy

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"phxgo/binlogd/mtls"
	"phxgo/binlogd/mtls/mtlstest"
	"phxgo/binlogd/mysqld"
	"phxgo/sqlproxy/auth"
	"phxgo/sqlproxy/topology"
)

// tlsStore is startProxy's authenticator reading mysql.user in TLS from
// node 1's MariaDB (the master of these tests).
func tlsStore(t *testing.T, m *TLS, addrs []string) *auth.Store {
	store := auth.New(auth.Config{User: adminUser, Password: adminPass, Addrs: func() []string { return addrs },
		TLS: func(addr string) *tls.Config { return MySQLClientTLS(m, addr, NodeIs(1)) }})
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
	// A man in the middle on node 2's MariaDB address with node 1's
	// certificate (the CA's, valid for the host): proxy 2, whose view has
	// its own MariaDB there, refuses it; it wants node 2's certificate.
	p2 := serveProxy(t, 2, masterView(m), Linearizable, tlsStore(t, mt, authAddrs), opts)
	if err := appDB(t, p2.addr, "", false).PingContext(ctx); err == nil {
		t.Fatal("session to a MariaDB presenting another node's certificate worked")
	}
}

// TestMySQLClientTLSWantsTheMember: MySQLClientTLS accepts the MariaDB at
// an address only with the certificate of the member the view has there;
// another node's or a proxy's (both of the CA, valid for the host) fail,
// and so does an address no member has.
func TestMySQLClientTLSWantsTheMember(t *testing.T) {
	ca := mtlstest.MakeCA(t, 3)
	mt := loadMaterial(t, proxyFiles(ca, 1))
	serve := func(f mtls.Files) string {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { lis.Close() })
		cfg := mtlstest.Load(t, f).Server()
		cfg.ClientAuth = tls.NoClientCert // MariaDB asks no certificate of the proxy
		go func() {
			for {
				c, err := lis.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					tc := tls.Server(c, cfg)
					if tc.Handshake() == nil {
						tc.Read(make([]byte, 1))
					}
				}()
			}
		}()
		return lis.Addr().String()
	}
	node2 := serve(mtlstest.Files(ca, 2))
	node3 := serve(mtlstest.Files(ca, 3))
	proxy2 := serve(proxyFiles(ca, 2))
	topo := topology.NewStatic(1, topology.View{MasterID: 1, SelfMySQLAddr: "127.0.0.1:1", MasterMySQLAddr: "127.0.0.1:1",
		Replicas: []topology.Replica{{ID: 2, MySQLAddr: node2}, {ID: 2, MySQLAddr: node3}, {ID: 2, MySQLAddr: proxy2}}})
	try := func(addr string) error {
		c, err := tls.Dial("tcp", addr, MySQLClientTLS(mt, addr, MySQLNodeAt(topo, addr)))
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := try(node2); err != nil {
		t.Fatalf("node 2's MariaDB: %v", err)
	}
	for addr, want := range map[string]string{node3: "presented node 3, want node 2", proxy2: "presented proxy 2, want node 2"} {
		if err := try(addr); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("MariaDB at %s: err %v, want %q", addr, err, want)
		}
	}
	topo.Set(topology.View{MasterID: 1, SelfMySQLAddr: "127.0.0.1:1"}) // node 2 left the view
	if err := try(node2); err == nil || !errors.Is(err, errNoMemberAt) {
		t.Errorf("MariaDB of no member: err %v", err)
	}
}
