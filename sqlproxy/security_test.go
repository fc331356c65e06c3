package sqlproxy

import (
	"context"
	"crypto/tls"
	"database/sql"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"phxgo/binlogd/mtls"
	"phxgo/binlogd/mtls/mtlstest"
	"phxgo/binlogd/mysqld"
	"phxgo/sqlproxy/topology"
)

// loadMaterial is f loaded as a proxy's reloadable TLS (Config.PeerTLS).
func loadMaterial(t *testing.T, f mtls.Files) *TLS {
	t.Helper()
	return NewTLS(mtlstest.Load(t, f))
}

// proxyFiles are proxy id's certificate files in a make-test-ca directory.
func proxyFiles(dir string, id uint32) mtls.Files {
	return mtls.DirFiles(dir, mtls.Identity{Role: mtls.RoleProxy, ID: id})
}

// refused reads phxgo_sqlproxy_refused_connections_total{reason}.
func refused(t *testing.T, p *testProxy, reason string) float64 {
	t.Helper()
	mfs, err := p.srv.metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "phxgo_sqlproxy_refused_connections_total" {
			continue
		}
		for _, m := range mf.Metric {
			for _, l := range m.Label {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.Counter.GetValue()
				}
			}
		}
	}
	return 0
}

// TestPeerTLS: the hop from node 2's proxy to the master's (node 1) runs
// in mutual TLS. The master's proxy refuses a hop in the clear and one
// whose certificate another CA signed; plain clients (and clients asking
// for TLS without a certificate) still use its port.
func TestPeerTLS(t *testing.T) {
	a := startInstances(t, 1)[0]
	ca, other := mtlstest.MakeCA(t, 3), mtlstest.MakeCA(t, 2)
	authAddrs := []string{a.Addr()}
	pa := startProxy(t, 1, withMembers(masterView(a), 2), Linearizable, authAddrs, func(c *Config) {
		c.PeerTLS = loadMaterial(t, proxyFiles(ca, 1))
	})
	fwd := func(tlsm *TLS) *testProxy {
		v := topology.View{MasterID: 1, MasterProxyAddr: pa.addr, MasterMySQLAddr: a.Addr(), SelfMySQLAddr: a.Addr()}
		return startProxy(t, 2, v, Linearizable, authAddrs, func(c *Config) { c.PeerTLS = tlsm })
	}
	ctx := context.Background()

	t.Run("tls_hop", func(t *testing.T) {
		pb := fwd(loadMaterial(t, proxyFiles(ca, 2)))
		db := appDB(t, pb.addr, "", false)
		if id := serverID(t, db, "SELECT @@server_id"); id != 1 {
			t.Fatalf("forwarded statement ran on %d", id)
		}
		if n := refused(t, pa, "hop_tls"); n != 0 {
			t.Fatalf("refused hops: %v", n)
		}
	})
	t.Run("non_member_hop_refused", func(t *testing.T) {
		// A proxy certificate of a node that is not a member (removed,
		// or never added) makes no hop (red-team test, session 38).
		v := topology.View{MasterID: 1, MasterProxyAddr: pa.addr, MasterMySQLAddr: a.Addr(), SelfMySQLAddr: a.Addr()}
		p3 := startProxy(t, 3, v, Linearizable, authAddrs, func(c *Config) {
			c.PeerTLS = loadMaterial(t, mtlstest.Issue(t, ca, mtls.Identity{Role: mtls.RoleProxy, ID: 3}))
		})
		err := appDB(t, p3.addr, "", false).PingContext(ctx)
		if err == nil || !strings.Contains(err.Error(), "not a member") {
			t.Fatalf("a hop from proxy 3, not a member: %v", err)
		}
		if n := refused(t, pa, "hop_not_member"); n < 1 {
			t.Fatalf("refused{hop_not_member} = %v", n)
		}
	})
	t.Run("plain_hop_refused", func(t *testing.T) {
		pb := fwd(nil)
		err := appDB(t, pb.addr, "", false).PingContext(ctx)
		if me := mysqlErr(t, err); me.Number != 1045 || !strings.Contains(me.Message, "must use TLS") {
			t.Fatalf("plain hop: %v", me)
		}
		if n := refused(t, pa, "hop_tls"); n < 1 {
			t.Fatalf("refused hop_tls = %v", n)
		}
	})
	t.Run("node_cert_hop_refused", func(t *testing.T) {
		// Node 2's binlogd certificate is of the cluster CA but names a
		// node, not a proxy: it does not make a hop.
		err := appDB(t, fwd(loadMaterial(t, mtlstest.Files(ca, 2))).addr, "", false).PingContext(ctx)
		if me := mysqlErr(t, err); me.Number != 1045 || !strings.Contains(me.Message, "issued to a proxy") {
			t.Fatalf("hop with a node certificate: %v", me)
		}
	})
	t.Run("impostor_master_proxy_refused", func(t *testing.T) {
		// The view says node 2 is the master; on its proxy address
		// answers a proxy with proxy 1's certificate (of the CA, valid
		// for the host). Proxy 3 wants proxy 2's and does not forward.
		v := topology.View{MasterID: 2, MasterProxyAddr: pa.addr, MasterMySQLAddr: a.Addr(), SelfMySQLAddr: a.Addr()}
		p3 := startProxy(t, 3, v, Linearizable, authAddrs, func(c *Config) { c.PeerTLS = loadMaterial(t, proxyFiles(ca, 3)) })
		if err := appDB(t, p3.addr, "", false).PingContext(ctx); err == nil {
			t.Fatal("forwarded to a proxy presenting proxy 1's certificate as the master's proxy 2")
		}
	})
	t.Run("other_CA_refused", func(t *testing.T) {
		pb := fwd(loadMaterial(t, proxyFiles(other, 2)))
		err := appDB(t, pb.addr, "", false).PingContext(ctx)
		if err == nil {
			t.Fatal("a hop with another CA's certificate got through")
		}
		t.Logf("forwarder distrusts the master's certificate: %v", err)
		// The master's side fails its handshake just after the forwarder.
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		await(t, wctx, "tls_handshake refusal counted", func() bool { return refused(t, pa, "tls_handshake") >= 1 })
		// A forwarder that trusts our CA but holds another's certificate:
		// it cannot present one the master accepts, so the hop is refused.
		m := mtlstest.Load(t, proxyFiles(other, 2))
		m.Pool = mtlstest.Load(t, proxyFiles(ca, 2)).Pool
		err = appDB(t, fwd(NewTLS(m)).addr, "", false).PingContext(ctx)
		if me := mysqlErr(t, err); me.Number != 1045 || !strings.Contains(me.Message, "certificate of the cluster CA") {
			t.Fatalf("stranger's certificate: %v", me)
		}
	})
	t.Run("clients_unchanged", func(t *testing.T) {
		if id := serverID(t, appDB(t, pa.addr, "", false), "SELECT @@server_id"); id != 1 {
			t.Fatal(id)
		}
		cfg := mysql.NewConfig()
		acc := mysqld.DefaultAccounts()
		cfg.User, cfg.Passwd, cfg.Net, cfg.Addr = acc.AppUser, acc.AppPassword, "tcp", pa.addr
		cfg.TLS = &tls.Config{InsecureSkipVerify: true} // a client asking for TLS without a certificate
		c, err := mysql.NewConnector(cfg)
		if err != nil {
			t.Fatal(err)
		}
		db := sql.OpenDB(c)
		defer db.Close()
		var cipher string
		if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&cipher); err != nil {
			t.Fatalf("TLS client without a certificate: %v", err)
		}
		if cli, err := exec.LookPath("mariadb"); err == nil {
			host, port, _ := strings.Cut(pa.addr, ":")
			out, err := exec.Command(cli, "-h", host, "-P", port, "-u", acc.AppUser, "-p"+acc.AppPassword, "-N", "-e", "SELECT @@server_id").CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != "1" {
				t.Fatalf("mariadb CLI through a TLS-enabled proxy: %v %s", err, out)
			}
		}
	})
}

// TestAllowedNetworks: a client outside Config.Allow gets ERR 1130
// before the greeting (go-sql-driver and the mariadb CLI both show it),
// and the refusal is counted.
func TestAllowedNetworks(t *testing.T) {
	a := startInstances(t, 1)[0]
	allow, err := ParseAllow("10.0.0.0/8, 192.168.1.7")
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, 1, masterView(a), Linearizable, []string{a.Addr()}, func(c *Config) { c.Allow = allow })
	err = appDB(t, p.addr, "", false).PingContext(context.Background())
	if me := mysqlErr(t, err); me.Number != 1130 || me.Message != "Host '127.0.0.1' is not allowed to connect to this MariaDB server" {
		t.Fatalf("got %v", me)
	}
	if cli, err := exec.LookPath("mariadb"); err == nil {
		host, port, _ := strings.Cut(p.addr, ":")
		out, _ := exec.Command(cli, "-h", host, "-P", port, "-u", "app", "-papp", "-e", "SELECT 1").CombinedOutput()
		// Connector/C 3.3 wraps a pre-greeting error in its own 2002
		// ("cannot be verified"); the 1130 and its text come through.
		if !strings.Contains(string(out), "1130") || !strings.Contains(string(out), "Host '127.0.0.1' is not allowed to connect") {
			t.Fatalf("mariadb CLI: %s", out)
		}
	}
	if n := refused(t, p, "network"); n < 1 {
		t.Fatalf("refused network = %v", n)
	}

	// The default list admits loopback.
	d := startProxy(t, 1, masterView(a), Linearizable, []string{a.Addr()}, nil)
	if id := serverID(t, appDB(t, d.addr, "", false), "SELECT @@server_id"); id != 1 {
		t.Fatal(id)
	}
	for _, bad := range []string{"", "10.0.0.0/33", "nope"} {
		if _, err := ParseAllow(bad); err == nil {
			t.Errorf("ParseAllow(%q) accepted", bad)
		}
	}
}
