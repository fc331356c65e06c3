package sqlproxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	grpchealth "google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"

	"phxgo/binlogd/mtls"
	"phxgo/binlogd/mtls/mtlstest"
	"phxgo/binlogd/mysqld"
	"phxgo/internal/testkit"
	"phxgo/sqlproxy/auth"
	"phxgo/sqlproxy/topology"
)

// TestReloadCertificate rotates a running proxy's certificate files and
// reloads: a client's new TLS handshake meets the new certificate, a
// session opened before keeps working, and a broken file (or another
// identity's certificate) is refused with the file named while the last
// good certificate stays in use.
func TestReloadCertificate(t *testing.T) {
	a := startInstances(t, 1)[0]
	ca := mtlstest.MakeCA(t, 2)
	files := mtlstest.OwnCopy(t, proxyFiles(ca, 1))
	p := startProxy(t, 1, masterView(a), Linearizable, []string{a.Addr()}, func(c *Config) { c.PeerTLS = NewTLS(mtlstest.Load(t, files)) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := mtlstest.Load(t, files).Pool
	var seen atomic.Pointer[big.Int]
	// handshake opens a new TLS session through the proxy and returns
	// the serial of the certificate it presented.
	handshake := func() *big.Int {
		t.Helper()
		seen.Store(nil)
		if err := tlsDB(t, p.addr, pool, &seen).PingContext(ctx); err != nil {
			t.Fatalf("TLS client: %v", err)
		}
		return seen.Load()
	}

	oldSerial := handshake()
	if want := mtlstest.Load(t, files).Leaf.SerialNumber; oldSerial.Cmp(want) != 0 {
		t.Fatalf("proxy presents serial %x, its file holds %x", oldSerial, want)
	}
	old, err := tlsDB(t, p.addr, pool, &seen).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if id := serverID(t, old, "SELECT @@server_id"); id != 1 {
		t.Fatal(id)
	}

	newSerial := mtlstest.Reissue(t, ca, mtls.Identity{Role: mtls.RoleProxy, ID: 1}, files)
	res, err := p.srv.Reload()
	if err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if res.CertSerial != newSerial.Text(16) {
		t.Fatalf("Reload reports serial %s, want %x", res.CertSerial, newSerial)
	}
	if got := handshake(); got.Cmp(newSerial) != 0 {
		t.Fatalf("a handshake after the reload met serial %x, want the new %x", got, newSerial)
	}
	if id := serverID(t, old, "SELECT @@server_id"); id != 1 {
		t.Fatal("the session from before the reload broke")
	}
	if n := reloads(t, p, "ok"); n != 1 {
		t.Fatalf("reloads ok = %v", n)
	}
	if got, want := sample(t, p, "phxgo_sqlproxy_tls_cert_expiry_timestamp_seconds", ""), mtlstest.Load(t, files).Leaf.NotAfter.Unix(); got != float64(want) {
		t.Fatalf("cert expiry gauge %v, want the new certificate's %v", got, want)
	}

	// A broken certificate file: refused, named, the new one stays.
	if err := os.WriteFile(files.Cert, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := p.srv.Reload(); err == nil || !strings.Contains(err.Error(), files.Cert) {
		t.Fatalf("Reload with a broken certificate file: %v, want an error naming %s", err, files.Cert)
	}
	// Another proxy's certificate: valid, but not who this proxy is.
	testkit.CopyFile(t, proxyFiles(ca, 2).Cert, files.Cert)
	testkit.CopyFile(t, proxyFiles(ca, 2).Key, files.Key)
	if _, err := p.srv.Reload(); err == nil || !strings.Contains(err.Error(), "proxy 2") || !strings.Contains(err.Error(), "runs as proxy 1") {
		t.Fatalf("Reload with proxy 2's certificate: %v", err)
	}
	if n := reloads(t, p, "error"); n != 2 {
		t.Fatalf("reloads error = %v", n)
	}
	if got := handshake(); got.Cmp(newSerial) != 0 {
		t.Fatalf("after refused reloads a handshake met %x, want the last good %x", got, newSerial)
	}
	if id := serverID(t, old, "SELECT @@server_id"); id != 1 {
		t.Fatal("the session from before the reloads broke")
	}
}

// TestReloadHopCA moves both ends of a forwarding hop to a new CA, one
// after the other. Between the two reloads the ends distrust each other:
// a new hop fails, while a transaction already running over the old hop
// finishes. After the second reload new hops work again.
func TestReloadHopCA(t *testing.T) {
	a := startInstances(t, 1)[0]
	ca, next := mtlstest.MakeCA(t, 2), mtlstest.MakeCA(t, 2)
	authAddrs := []string{a.Addr()}
	fa, fb := mtlstest.OwnCopy(t, proxyFiles(ca, 1)), mtlstest.OwnCopy(t, proxyFiles(ca, 2))
	pa := startProxy(t, 1, withMembers(masterView(a), 2), Linearizable, authAddrs, func(c *Config) { c.PeerTLS = NewTLS(mtlstest.Load(t, fa)) })
	v := topology.View{MasterID: 1, MasterProxyAddr: pa.addr, MasterMySQLAddr: a.Addr(), SelfMySQLAddr: a.Addr()}
	pb := startProxy(t, 2, v, Linearizable, authAddrs, func(c *Config) { c.PeerTLS = NewTLS(mtlstest.Load(t, fb)) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	tx, err := appDB(t, pb.addr, "", false).BeginTx(ctx, nil) // keeps its hop for good
	if err != nil {
		t.Fatal(err)
	}
	if id := serverID(t, tx, "SELECT @@server_id"); id != 1 {
		t.Fatal(id)
	}

	mtlstest.CopyOver(t, proxyFiles(next, 1), fa)
	if _, err := pa.srv.Reload(); err != nil {
		t.Fatalf("master's proxy reload: %v", err)
	}
	if err := appDB(t, pb.addr, "", false).PingContext(ctx); err == nil {
		t.Fatal("a new hop from a proxy of the old CA got through after the master's proxy moved to the new CA")
	}
	if id := serverID(t, tx, "SELECT @@server_id"); id != 1 {
		t.Fatal(id)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("the transaction over the hop from before the reload: %v", err)
	}

	mtlstest.CopyOver(t, proxyFiles(next, 2), fb)
	if _, err := pb.srv.Reload(); err != nil {
		t.Fatalf("forwarding proxy reload: %v", err)
	}
	if id := serverID(t, appDB(t, pb.addr, "", false), "SELECT @@server_id"); id != 1 {
		t.Fatalf("new hop after both reloads ran on %d", id)
	}
}

// TestReloadBinlogdLink: the gRPC credentials the proxy dials binlogd
// with follow reloads. A real gRPC server with a node certificate stands
// in for binlogd (the proxy's side is under test) and records which
// client certificate each call came with.
func TestReloadBinlogdLink(t *testing.T) {
	ca, next := mtlstest.MakeCA(t, 1), mtlstest.MakeCA(t, 1)
	files := mtlstest.OwnCopy(t, proxyFiles(ca, 1))
	tl := NewTLS(mtlstest.Load(t, files))
	p := startProxy(t, 1, topology.View{MasterID: 1, IsMaster: true}, Linearizable, nil, func(c *Config) { c.PeerTLS = tl })
	creds := tl.Credentials() // cmd/sqlproxy takes them once, at start
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	addr := fakeBinlogd(t, mtlstest.Load(t, mtlstest.Files(ca, 1)))
	check := func(cc *grpc.ClientConn) (*big.Int, error) {
		var pr peer.Peer
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err := healthpb.NewHealthClient(cc).Check(cctx, &healthpb.HealthCheckRequest{}, grpc.Peer(&pr))
		if err != nil {
			return nil, err
		}
		return serialSeenBy(addr, pr.LocalAddr.String()), nil
	}
	dial := func(addr string) *grpc.ClientConn {
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		return cc
	}
	old := dial(addr)
	oldSerial, err := check(old)
	if err != nil || oldSerial.Cmp(mtlstest.Load(t, files).Leaf.SerialNumber) != 0 {
		t.Fatalf("binlogd saw %x (%v), want the proxy's first certificate", oldSerial, err)
	}
	newSerial := mtlstest.Reissue(t, ca, mtls.Identity{Role: mtls.RoleProxy, ID: 1}, files)
	if _, err := p.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	if got, err := check(dial(addr)); err != nil || got.Cmp(newSerial) != 0 {
		t.Fatalf("a new link after the reload showed %x (%v), want the new %x", got, err, newSerial)
	}
	if got, err := check(old); err != nil || got.Cmp(oldSerial) != 0 {
		t.Fatalf("the link from before the reload showed %x (%v), want its own %x", got, err, oldSerial)
	}

	// binlogd moved to a new CA: the proxy's CA pool follows on reload.
	moved := fakeBinlogd(t, mtlstest.Load(t, mtlstest.Files(next, 1)))
	if _, err := check(dial(moved)); err == nil {
		t.Fatal("a proxy of the old CA reached a binlogd of the new one")
	}
	mtlstest.CopyOver(t, proxyFiles(next, 1), files)
	if _, err := p.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, err := check(dial(moved)); err != nil {
		t.Fatalf("after the reload to the new CA: %v", err)
	}
}

// TestReloadRules changes routing rules of a running read/write-split
// proxy through its settings file (max_replica_behind, judged by the
// health checks; master_preferred, by the router): new sessions follow
// them, a bad value is refused and the rule in force stays. The replica is held one
// transaction behind (FLUSH TABLES WITH READ LOCK stops its SQL thread)
// so max_replica_behind decides where a read goes.
func TestReloadRules(t *testing.T) {
	insts := startInstances(t, 2)
	m, r := insts[0], insts[1]
	replicate(t, m, r)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	settings := filepath.Join(t.TempDir(), "sqlproxy.json")
	writeSettings(t, settings, `{"max_replica_behind": 100}`)
	p := startProxy(t, 1, masterView(m, r), RWSplit, []string{m.Addr()}, func(c *Config) {
		c.AdminUser, c.AdminPassword = adminUser, adminPass
		c.HealthInterval = 50 * time.Millisecond
		c.Hold = 0
		c.SettingsFile = settings
	})
	if got := p.srv.rules().MaxReplicaBehind; got != 100 {
		t.Fatalf("max_replica_behind at start = %d, want the file's 100", got)
	}
	root, err := r.DB("")
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	freeze, err := root.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer freeze.Close()
	if _, err := freeze.ExecContext(ctx, "FLUSH TABLES WITH READ LOCK"); err != nil {
		t.Fatal(err)
	}
	defer freeze.ExecContext(context.Background(), "UNLOCK TABLES")
	if _, err := appDB(t, m.Addr(), "", false).ExecContext(ctx, "CREATE DATABASE app"); err != nil {
		t.Fatal(err)
	}
	behind := func() bool {
		for _, st := range p.srv.health.snapshot() {
			return st.Behind >= 1
		}
		return false
	}
	await(t, ctx, "replica seen a transaction behind", behind)
	// readsOn awaits a new session's read on server id want (a health
	// check applies the rule to the replica first).
	readsOn := func(want uint32) {
		t.Helper()
		await(t, ctx, fmt.Sprintf("a new session reading on %d", want), func() bool {
			db := appDB(t, p.addr, "", false)
			defer db.Close()
			return serverID(t, db, "SELECT @@server_id") == want
		})
	}
	readsOn(2)

	writeSettings(t, settings, `{"max_replica_behind": 0}`)
	if _, err := p.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	readsOn(1)

	writeSettings(t, settings, `{"max_replica_behind": -1}`)
	if _, err := p.srv.Reload(); err == nil || !strings.Contains(err.Error(), "max-replica-behind") || !strings.Contains(err.Error(), settings) {
		t.Fatalf("Reload with max_replica_behind -1: %v", err)
	}
	if got := p.srv.rules().MaxReplicaBehind; got != 0 {
		t.Fatalf("after a refused reload max_replica_behind = %d, want 0 still", got)
	}
	// Deleting the key goes back to the start value (the flag's, 10000).
	writeSettings(t, settings, `{}`)
	if _, err := p.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	readsOn(2)
	// A rule the router reads per statement: the healthy replica gets
	// no more reads.
	writeSettings(t, settings, `{"master_preferred": true}`)
	if _, err := p.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	readsOn(1)
}

// TestReloadLogLevel: the settings file's log_level is applied at start
// and on reload; a bad level, an unknown key or malformed JSON is refused
// and the level stays. A debug line ("login failed", here for a denied
// root login) shows only while the level is debug.
func TestReloadLogLevel(t *testing.T) {
	settings := filepath.Join(t.TempDir(), "sqlproxy.json")
	writeSettings(t, settings, `{"log_level": "info"}`)
	var out testkit.LogBuffer
	level := new(slog.LevelVar)
	level.Set(slog.LevelDebug) // the flag (-v); the file overrides it
	p := startProxy(t, 1, topology.View{MasterID: 1, IsMaster: true}, Linearizable, nil, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: level}))
		c.LogLevel, c.SettingsFile = level, settings
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// loginFailedLogged tries a root login (denied before any backend)
	// and reports whether the debug line for it was logged.
	attempt := 0
	loginFailedLogged := func() bool {
		t.Helper()
		attempt++
		before := out.Len()
		refusedBefore := refused(t, p, "denied_user")
		cfg := mysql.NewConfig()
		cfg.User, cfg.Net, cfg.Addr, cfg.Timeout = "root", "tcp", p.addr, 5*time.Second
		c, _ := mysql.NewConnector(cfg)
		if _, err := c.Connect(ctx); err == nil {
			t.Fatal("root logged in")
		}
		// The session logs after it answered: await the refusal's count
		// (its Info line is logged once per refusalLogEvery), then look
		// for the debug line.
		await(t, ctx, "the refusal counted", func() bool {
			return refused(t, p, "denied_user") == refusedBefore+1
		})
		// handle logs "login failed" before it lowers the gauge.
		await(t, ctx, "the session ended", func() bool {
			return sample(t, p, "phxgo_sqlproxy_client_connections", Linearizable.String()) == 0
		})
		return strings.Contains(out.String()[before:], "login failed")
	}
	if level.Level() != slog.LevelInfo {
		t.Fatalf("level at start %v, want the file's info", level.Level())
	}
	if loginFailedLogged() {
		t.Fatal("debug line logged at level info")
	}
	writeSettings(t, settings, `{"log_level": "debug"}`)
	if res, err := p.srv.Reload(); err != nil || res.LogLevel != "debug" {
		t.Fatalf("Reload: %+v %v", res, err)
	}
	if !loginFailedLogged() {
		t.Fatal("no debug line after the reload to debug")
	}
	for _, bad := range []struct{ file, want string }{
		{`{"log_level": "loud"}`, `log_level "loud"`},
		{`{"log_levle": "info"}`, `unknown field "log_levle"`},
		{`{"read_master_percentage": 150}`, "read-master-percentage 150"},
		{`{"hold": 5}`, "hold"},
		{`{"log_level": "info"`, "unexpected EOF"},
		{`{"log_level": "info"} {"log_level": "debug"}`, "more than one JSON object"},
	} {
		writeSettings(t, settings, bad.file)
		_, err := p.srv.Reload()
		if err == nil || !strings.Contains(err.Error(), bad.want) || !strings.Contains(err.Error(), settings) {
			t.Errorf("settings %s: %v, want an error naming the file and %q", bad.file, err, bad.want)
		}
		if !strings.Contains(out.String(), "reload refused") {
			t.Errorf("settings %s: refusal not logged", bad.file)
		}
	}
	if level.Level() != slog.LevelDebug {
		t.Fatalf("level after refused reloads %v, want debug still", level.Level())
	}
	if n := reloads(t, p, "error"); n != 6 {
		t.Fatalf("reloads error = %v", n)
	}
	// Without a settable level, a file naming one is refused at start.
	writeSettings(t, settings, `{"log_level": "warn"}`)
	cfg := DefaultConfig()
	cfg.SettingsFile = settings
	if _, err := New(cfg, topology.NewStatic(1, topology.View{}), denyAll{}); err == nil || !strings.Contains(err.Error(), "no settable level") {
		t.Fatalf("New with log_level and no LevelVar: %v", err)
	}
}

// ---- helpers

func writeSettings(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// tlsDB is an app-user pool through addr over TLS (CA pool, no client
// certificate); each handshake stores the proxy's serial in seen.
func tlsDB(t *testing.T, addr string, pool *x509.CertPool, seen *atomic.Pointer[big.Int]) *sql.DB {
	t.Helper()
	acc := mysqld.DefaultAccounts()
	host, _, _ := net.SplitHostPort(addr)
	return clientDB(t, addr, acc.AppUser, acc.AppPassword, "", func(cfg *mysql.Config) {
		cfg.TLS = &tls.Config{RootCAs: pool, ServerName: host, MinVersion: tls.VersionTLS12,
			VerifyConnection: func(cs tls.ConnectionState) error {
				seen.Store(cs.PeerCertificates[0].SerialNumber)
				return nil
			}}
	})
}

// reloads reads phxgo_sqlproxy_reloads_total{result}.
func reloads(t *testing.T, p *testProxy, result string) float64 {
	t.Helper()
	return sample(t, p, "phxgo_sqlproxy_reloads_total", result)
}

// sample reads the counter or gauge name whose one label is label, or
// that has no label when label is "" (0 when there is no such sample).
func sample(t *testing.T, p *testProxy, name, label string) float64 {
	t.Helper()
	mfs, err := p.srv.metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.Metric {
			if label == "" && len(m.Label) == 0 || len(m.Label) == 1 && m.Label[0].GetValue() == label {
				if m.Counter != nil {
					return m.Counter.GetValue()
				}
				return m.Gauge.GetValue()
			}
		}
	}
	return 0
}

// fakeBinlogd serves gRPC health with m (a node certificate, client
// certificates required) and records, per client address, the serial of
// the certificate each connection presented (serialSeenBy).
func fakeBinlogd(t *testing.T, m *mtls.Material) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(m.Server())), grpc.UnaryInterceptor(
		func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if pr, ok := peer.FromContext(ctx); ok {
				if info, ok := pr.AuthInfo.(credentials.TLSInfo); ok && len(info.State.PeerCertificates) > 0 {
					seenSerials.Store(addr+" "+pr.Addr.String(), info.State.PeerCertificates[0].SerialNumber)
				}
			}
			return h(ctx, req)
		}))
	healthpb.RegisterHealthServer(srv, grpchealth.NewServer())
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return addr
}

var seenSerials sync.Map // "server client" -> *big.Int

func serialSeenBy(server, client string) *big.Int {
	v, ok := seenSerials.Load(server + " " + client)
	if !ok {
		return nil
	}
	return v.(*big.Int)
}

// denyAll is an Authenticator that lets nobody in.
type denyAll struct{}

func (denyAll) Verify(context.Context, string, auth.Client, []byte, []byte) (auth.Account, error) {
	return auth.Account{}, errors.New("denied")
}
