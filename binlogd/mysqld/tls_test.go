package mysqld

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"math/big"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"phxgo/binlogd/mtls"
	"phxgo/binlogd/mtls/mtlstest"
)

// tlsDB opens user over TCP with TLS verified against the CA in pool,
// recording the server certificate's serial in *serial.
func tlsDB(t *testing.T, inst *Instance, user, pass string, pool *x509.CertPool, serial **big.Int) *sql.DB {
	t.Helper()
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr = user, pass, "tcp", inst.Addr()
	cfg.Timeout = 5 * time.Second
	cfg.TLS = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, ServerName: "127.0.0.1",
		VerifyConnection: func(cs tls.ConnectionState) error {
			*serial = cs.PeerCertificates[0].SerialNumber
			return nil
		}}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d := sql.OpenDB(conn)
	d.SetMaxOpenConns(1)
	t.Cleanup(func() { d.Close() })
	return d
}

func sslCipher(t *testing.T, db *sql.DB) string {
	t.Helper()
	var name, v string
	if err := db.QueryRow("SHOW SESSION STATUS LIKE 'Ssl_cipher'").Scan(&name, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// With the node's TLS files, MariaDB offers TLS with the node's
// certificate (verified against the cluster CA, for the address dialled),
// from copies the server's OS user owns (0600); a plain client still
// logs in; a reload (RefreshTLS) puts a reissued certificate in force for
// new connections without a restart.
func TestServesTLS(t *testing.T) {
	if _, err := exec.LookPath("mariadb-install-db"); err != nil {
		t.Skip(ErrNotInstalled)
	}
	caDir := mtlstest.MakeCA(t, 1)
	files := mtlstest.OwnCopy(t, mtlstest.Files(caDir, 1))
	inst, err := New(Options{Dir: t.TempDir(), Port: FreePort(t), ServerID: 1,
		TLS: TLSFiles{Cert: files.Cert, Key: files.Key, CA: files.CA}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := inst.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if err := inst.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inst.Kill() })

	// The copies: the server's OS user's, 0600; the directory not its.
	wantUID := os.Geteuid()
	if wantUID == 0 {
		u, err := user.Lookup(ServerOSUser)
		if err != nil {
			t.Fatal(err)
		}
		wantUID, _ = strconv.Atoi(u.Uid)
	}
	for _, n := range []string{tlsCert, tlsKey, tlsCA} {
		fi, err := os.Stat(inst.tlsCopy(n))
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != wantUID || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: uid %d mode %04o, want uid %d mode 0600", n, st.Uid, fi.Mode().Perm(), wantUID)
		}
	}
	if fi, err := os.Stat(inst.TLSDir()); err != nil || int(fi.Sys().(*syscall.Stat_t).Uid) != os.Geteuid() {
		t.Errorf("%s: want owned by binlogd's user (%v)", inst.TLSDir(), err)
	}

	admin := inst.TestDB(t)
	var have string
	if err := admin.QueryRow("SELECT @@have_ssl").Scan(&have); err != nil {
		t.Fatal(err)
	}
	if have != "YES" {
		t.Fatalf("@@have_ssl = %s, want YES", have)
	}
	for _, q := range []string{"SET GLOBAL read_only=OFF", "CREATE USER 'tlsu'@'127.0.0.1' IDENTIFIED BY 'pw'"} {
		if _, err := admin.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}

	// A plain client: no require_secure_transport.
	if c := sslCipher(t, tcpDB(t, inst, "tlsu", "pw", "")); c != "" {
		t.Errorf("plain client: Ssl_cipher %q, want none", c)
	}
	ca := mtlstest.Load(t, mtls.Files(files)).Pool
	var serial *big.Int
	if c := sslCipher(t, tlsDB(t, inst, "tlsu", "pw", ca, &serial)); c == "" {
		t.Fatal("TLS client: no Ssl_cipher")
	}
	if want := mtlstest.Load(t, mtls.Files(files)).Leaf.SerialNumber; serial.Cmp(want) != 0 {
		t.Fatalf("server certificate serial %x, want the node's %x", serial, want)
	}

	// Rotation: a reissued certificate, then RefreshTLS (binlogd's reload).
	newSerial := mtlstest.Reissue(t, caDir, mtls.Identity{Role: mtls.RoleNode, ID: 1}, mtls.Files(files))
	binlogPos := func() string {
		var pos string
		if err := admin.QueryRow("SELECT @@gtid_binlog_pos").Scan(&pos); err != nil {
			t.Fatal(err)
		}
		return pos
	}
	before := binlogPos()
	if err := inst.RefreshTLS(ctx); err != nil {
		t.Fatal(err)
	}
	// The FLUSH is not binlogged: a GTID of this server's own would
	// collide with the master's stream on a replica.
	if after := binlogPos(); after != before {
		t.Fatalf("RefreshTLS wrote to the binlog: gtid_binlog_pos %q, was %q", after, before)
	}
	if c := sslCipher(t, tlsDB(t, inst, "tlsu", "pw", ca, &serial)); c == "" || serial.Cmp(newSerial) != 0 {
		t.Fatalf("after RefreshTLS: cipher %q serial %x, want the reissued %x", c, serial, newSerial)
	}
}
