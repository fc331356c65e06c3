package sqlproxy

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"phxgo/binlogd/mtls/mtlstest"
	"phxgo/binlogd/mysqld"
	"phxgo/sqlproxy/topology"
)

// TestClientPausesReadingBigResult: a client that stops reading a result
// larger than every buffer on the way, for 4 × PeerTimeout, then reads
// on, gets all of it, through a replica's proxy and the TLS hop. While
// it pauses, both proxies' writes to their client (the client, and the
// replica's proxy on the hop) meet a zero window, which TCP_USER_TIMEOUT
// counts as silence: at PeerTimeout the kernel aborted the connection,
// where MariaDB itself waits net_write_timeout (60 s).
func TestClientPausesReadingBigResult(t *testing.T) {
	const peer = time.Second
	phop, root := hopToMaster(t, peer)
	mustExec(t, root, "CREATE DATABASE test")
	acc := mysqld.DefaultAccounts()
	db := clientDB(t, phop.addr, acc.AppUser, acc.AppPassword, "test", func(*mysql.Config) {})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const rows, size = 64, 1 << 20 // 64 MiB: more than the sockets on the way hold
	rs, err := db.QueryContext(ctx, "SELECT seq, REPEAT('x', ?) FROM seq_1_to_64", size)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	n := 0
	var seq int
	var pad []byte
	for rs.Next() {
		if err := rs.Scan(&seq, &pad); err != nil {
			t.Fatal(err)
		}
		n++
		if len(pad) != size || seq != n {
			t.Fatalf("row %d: seq %d, %d bytes", n, seq, len(pad))
		}
		if n == 1 {
			time.Sleep(4 * peer) // the pause is what this test is about
		}
	}
	if err := rs.Err(); err != nil {
		t.Fatalf("after %d of %d rows: %v", n, rows, err)
	}
	if n != rows {
		t.Fatalf("%d rows, want %d", n, rows)
	}
}

// hopToMaster starts a MariaDB, its node's proxy and another node's
// proxy that reaches it over the TLS hop, both with PeerTimeout peer; it
// returns the other node's proxy and a root handle on the MariaDB.
func hopToMaster(t *testing.T, peer time.Duration) (*testProxy, *sql.DB) {
	t.Helper()
	master := startInstances(t, 1)[0]
	root, err := master.DB("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	ca := mtlstest.MakeCA(t, 2)
	authAddrs := []string{master.Addr()}
	pa := startProxy(t, 1, withMembers(masterView(master), 2), Linearizable, authAddrs, func(c *Config) {
		c.PeerTLS, c.PeerTimeout = loadMaterial(t, proxyFiles(ca, 1)), peer
	})
	hopView := topology.View{MasterID: 1, MasterProxyAddr: pa.addr, MasterMySQLAddr: master.Addr(), SelfMySQLAddr: master.Addr()}
	return startProxy(t, 2, hopView, Linearizable, authAddrs, func(c *Config) {
		c.PeerTLS, c.PeerTimeout = loadMaterial(t, proxyFiles(ca, 2)), peer
	}), root
}
