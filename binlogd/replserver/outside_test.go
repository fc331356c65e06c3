package replserver

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/go-sql-driver/mysql"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/mtls"
	"phxgo/binlogd/mtls/mtlstest"
)

const (
	outsideUser     = "phxgo_repl"
	outsidePassword = "outside-secret"
)

// TestOutsideMayQuery: the outside account may run the queries a MariaDB
// replica's IO thread sends (TestReplicaConnectQueries' list) and nothing
// else.
func TestOutsideMayQuery(t *testing.T) {
	for _, q := range []string{
		"SELECT UNIX_TIMESTAMP()", "SHOW VARIABLES LIKE 'SERVER_ID'", "SET @master_heartbeat_period= 1000000000",
		"SET @master_binlog_checksum= @@global.binlog_checksum", "SELECT @master_binlog_checksum",
		"SET @mariadb_slave_capability=4", "SELECT @@GLOBAL.gtid_domain_id", "SET @slave_connect_state='0-1-5,1-2-7'",
		"SET @slave_gtid_strict_mode=1", "SET @slave_gtid_ignore_duplicates=0", "SELECT @slave_connect_state",
		"SHOW GLOBAL VARIABLES LIKE 'rpl_semi_sync_master_enabled'", "SET skip_replication=1", "SET NAMES utf8mb4",
		"select @@version", "SELECT @a, @@b;", "SELECT @@version LIMIT 1",
	} {
		if !outsideMayQuery(q) {
			t.Errorf("%q refused: a replica sends it", q)
		}
	}
	for _, q := range []string{
		"SELECT 1", "SELECT VERSION()", "SELECT 'x'", "SELECT @a, 1", "SELECT SLEEP(10)", "SHOW MASTER STATUS", "SHOW BINARY LOGS",
		"KILL 5", "SET GLOBAL read_only=0", "SET @@global.x=1", "SET x", "DROP TABLE t", "", "SELECT", "SET @a=1, sql_log_bin=0",
		"BINLOG 'xyz'", "SELECT @a FROM mysql.user", "SELECT @@version FROM mysql.user", "SELECT @@x+1",
	} {
		if outsideMayQuery(q) {
			t.Errorf("%q allowed to the outside account", q)
		}
	}
}

// outsideEndpoint serves src with both accounts over TLS from a test CA;
// it returns the endpoint and a client TLS config that trusts the CA.
func outsideEndpoint(t *testing.T, src Source) (*Server, *tls.Config) {
	t.Helper()
	return outsideEndpointLogging(t, src, nil)
}

// outsideEndpointLogging is outsideEndpoint logging to log (nil: the
// default logger).
func outsideEndpointLogging(t *testing.T, src Source, log *slog.Logger) (*Server, *tls.Config) {
	t.Helper()
	return outsideEndpointWith(t, src, func(c *Config) { c.Logger = log })
}

// outsideEndpointWith is outsideEndpoint with tweak applied to its
// config.
func outsideEndpointWith(t *testing.T, src Source, tweak func(*Config)) (*Server, *tls.Config) {
	t.Helper()
	dir := mtlstest.MakeCA(t, 1)
	m, err := mtls.Load(mtlstest.Files(dir, 1), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Addr, cfg.User, cfg.Password, cfg.ServerID = "127.0.0.1:0", testUser, testPassword, endpointID
	cfg.ReplUser, cfg.ReplPassword, cfg.TLS = outsideUser, outsidePassword, m.ServerOptionalClient()
	cfg.HeartbeatPeriod = 200 * time.Millisecond
	tweak(&cfg)
	s, err := New(cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, &tls.Config{RootCAs: m.Pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
}

func openAs(t *testing.T, addr, user, pw string, tc *tls.Config) *sql.DB {
	t.Helper()
	c := mysql.NewConfig()
	c.User, c.Passwd, c.Net, c.Addr, c.Timeout = user, pw, "tcp", addr, 5*time.Second
	c.TLS = tc
	conn, err := mysql.NewConnector(c)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxIdleConns(0)
	t.Cleanup(func() { db.Close() })
	return db
}

func mysqlErr(t *testing.T, err error, code uint16, contains string) {
	t.Helper()
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != code || !strings.Contains(me.Message, contains) {
		t.Fatalf("got %v, want MySQL error %d containing %q", err, code, contains)
	}
}

// TestOutsideAccountLogin: the outside account logs in with its password
// over TLS only, and may run a replica's queries but not SELECT 1; the
// node's account is unchanged (plain connections, any query the endpoint
// answers); strangers get 1045 whatever name they try.
func TestOutsideAccountLogin(t *testing.T) {
	srv, tc := outsideEndpoint(t, NewMemorySource(0))
	addr := srv.Addr()

	db := openAs(t, addr, outsideUser, outsidePassword, tc)
	var dom string
	if err := db.QueryRow("SELECT @@GLOBAL.gtid_domain_id").Scan(&dom); err != nil || dom != "0" {
		t.Fatalf("replica query over TLS: %q %v", dom, err)
	}
	_, err := db.Exec("SELECT 1")
	mysqlErr(t, err, erSpecificAccessDenied, "may only replicate")
	_, err = db.Exec("SHOW MASTER STATUS")
	mysqlErr(t, err, erSpecificAccessDenied, "SHOW MASTER STATUS")
	if st := srv.Stats(); st.Denied != 2 {
		t.Fatalf("Denied = %d, want 2", st.Denied)
	}

	// The right password without TLS: refused, and told why.
	err = openAs(t, addr, outsideUser, outsidePassword, nil).Ping()
	mysqlErr(t, err, erAccessDenied, "MASTER_SSL=1")

	// Strangers: a wrong password, the outside name with the node's
	// password, names that do not exist, no password at all.
	for _, c := range []struct{ user, pw string }{
		{outsideUser, "wrong"}, {outsideUser, testPassword}, {"root", ""}, {"root", "root"}, {"nobody", outsidePassword}, {testUser, "wrong"},
	} {
		err := openAs(t, addr, c.user, c.pw, tc).Ping()
		mysqlErr(t, err, erAccessDenied, "Access denied")
	}

	// The node's account: plain, and SELECT 1 still answers.
	var one string
	if err := openAs(t, addr, testUser, testPassword, nil).QueryRow("SELECT 1").Scan(&one); err != nil || one != "1" {
		t.Fatalf("node account: %q %v", one, err)
	}
}

// TestOutsideReplicaDump: an outside replica (go-mysql's BinlogSyncer over
// TLS) streams the log from a position it holds; a server_id of the
// cluster's own range is refused with 1236, and so is a purged position,
// with the oldest position held and what to do.
func TestOutsideReplicaDump(t *testing.T) {
	src := NewMemorySource(0)
	for i := uint64(1); i <= 10; i++ {
		if err := src.Append(gtidOnlyTxn(binlog.GTID{Server: 1, Seq: i})); err != nil {
			t.Fatal(err)
		}
	}
	if err := src.PurgeThrough(binlog.GTID{Server: 1, Seq: 3}); err != nil {
		t.Fatal(err)
	}
	srv, tc := outsideEndpoint(t, src)
	host, port, err := splitHostPort(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	stream := func(serverID uint32, pos string) (*replication.BinlogSyncer, *replication.BinlogStreamer) {
		t.Helper()
		s := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{ServerID: serverID, Flavor: "mariadb", Host: host, Port: port,
			User: outsideUser, Password: outsidePassword, TLSConfig: tc, HeartbeatPeriod: 200 * time.Millisecond, MaxReconnectAttempts: 1})
		t.Cleanup(s.Close)
		gs, err := gomysql.ParseMariadbGTIDSet(pos)
		if err != nil {
			t.Fatal(err)
		}
		st, err := s.StartSyncGTID(gs)
		if err != nil {
			t.Fatal(err)
		}
		return s, st
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	_, st := stream(4000, "0-1-5")
	var got []string
	for len(got) < 5 {
		ev, err := st.GetEvent(ctx)
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		if g, ok := ev.Event.(*replication.MariadbGTIDEvent); ok {
			got = append(got, g.GTID.String())
		}
	}
	if strings.Join(got, ",") != "0-1-6,0-1-7,0-1-8,0-1-9,0-1-10" {
		t.Fatalf("outside replica got %v", got)
	}

	refused := func(serverID uint32, pos, want string) {
		t.Helper()
		_, st := stream(serverID, pos)
		_, err := st.GetEvent(ctx)
		var me *gomysql.MyError
		if !errors.As(err, &me) || me.Code != erMasterFatalReading || !strings.Contains(me.Message, want) {
			t.Fatalf("server_id %d at %s: %v, want 1236 containing %q", serverID, pos, err, want)
		}
	}
	refused(1, "0-1-5", "server_id of at least 3000")
	refused(4001, "0-1-2", "binlogd backup")
	refused(4002, "7-1-5", "binlogd backup")
}

// TestOutsideAccountWithoutTLS: on a node run with insecure_no_tls the
// endpoint offers no TLS, so the outside account logs in plain; it is
// still limited to replication.
func TestOutsideAccountWithoutTLS(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Addr, cfg.User, cfg.Password, cfg.ServerID = "127.0.0.1:0", testUser, testPassword, endpointID
	cfg.ReplUser, cfg.ReplPassword = outsideUser, outsidePassword
	s, err := New(cfg, NewMemorySource(0))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	db := openAs(t, s.Addr(), outsideUser, outsidePassword, nil)
	var v string
	if err := db.QueryRow("SELECT UNIX_TIMESTAMP()").Scan(&v); err != nil {
		t.Fatalf("plain login without TLS offered: %v", err)
	}
	_, err = db.Exec("SELECT 1")
	mysqlErr(t, err, erSpecificAccessDenied, "may only replicate")
	err = openAs(t, s.Addr(), outsideUser, "wrong", nil).Ping()
	mysqlErr(t, err, erAccessDenied, "Access denied")

	bad := cfg
	bad.ReplUser = testUser
	if _, err := New(bad, NewMemorySource(0)); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("ReplUser = User: %v", err)
	}
	bad = cfg
	bad.ReplPassword = ""
	if _, err := New(bad, NewMemorySource(0)); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("ReplUser without a password: %v", err)
	}
}
