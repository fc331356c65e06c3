package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/localcluster"
	"phxgo/binlogd/mtls"
	"phxgo/binlogd/mysqld"
)

// outsideReplica is a plain MariaDB, not a member of the cluster, that
// replicates from a node's replication endpoint with the outside
// replicas' account (README "Outside replicas").
type outsideReplica struct {
	t    *testing.T
	db   *sql.DB
	ca   string // the cluster's CA certificate
	info localcluster.Info
}

// startOutsideMariaDB initializes and starts a plain MariaDB while the
// caller starts the cluster (both take seconds); the returned function
// waits for it and attaches it to cluster c.
func startOutsideMariaDB(t *testing.T, serverID uint32) func(c *localcluster.Cluster) *outsideReplica {
	t.Helper()
	inst, err := mysqld.New(mysqld.Options{Dir: t.TempDir(), Port: mysqld.FreePort(t), ServerID: serverID})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		err := inst.Init(ctx)
		if err == nil {
			err = inst.Start(ctx)
		}
		started <- err
	}()
	t.Cleanup(func() { <-started; _ = inst.Kill() })
	return func(c *localcluster.Cluster) *outsideReplica {
		t.Helper()
		if err := <-started; err != nil {
			started <- err
			t.Fatalf("outside MariaDB: %v", err)
		}
		started <- nil
		info := readInfo(t, c)
		if info.ReplUser == "" || info.ReplPass == "" {
			t.Fatalf("cluster.json lists no outside replicas' account (repl_user, repl_password): %+v", info)
		}
		db, err := inst.DB("")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if t.Failed() {
				if b, err := os.ReadFile(inst.ErrorLog()); err == nil {
					if len(b) > 4000 {
						b = b[len(b)-4000:]
					}
					t.Logf("outside replica's error log tail:\n%s", b)
				}
			}
			db.Close()
		})
		return &outsideReplica{t: t, db: db, ca: filepath.Join(c.Spec.TLSPath(), mtls.CACertFile), info: info}
	}
}

func (r *outsideReplica) replAddr(id uint32) string {
	for _, n := range r.info.Nodes {
		if n.ID == id {
			return n.ReplAddr
		}
	}
	r.t.Fatalf("node %d not in cluster.json", id)
	return ""
}

// move points a replicating replica at node id's endpoint as README
// "Outside replicas" tells (its position and other settings stay).
func (r *outsideReplica) move(id uint32) {
	r.t.Helper()
	host, port, _ := net.SplitHostPort(r.replAddr(id))
	mustExec(r.t, r.db, "STOP SLAVE")
	mustExec(r.t, r.db, fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='%s', MASTER_PORT=%s, MASTER_USE_GTID=slave_pos", host, port))
	mustExec(r.t, r.db, "START SLAVE")
}

// follow points the replica at node id's endpoint from gtidPos, over
// TLS with the server's certificate checked against the cluster's CA.
func (r *outsideReplica) follow(id uint32, gtidPos string) {
	r.t.Helper()
	host, port, _ := net.SplitHostPort(r.replAddr(id))
	mustExec(r.t, r.db, "STOP SLAVE")
	mustExec(r.t, r.db, "RESET SLAVE ALL")
	mustExec(r.t, r.db, "SET GLOBAL gtid_slave_pos = ?", gtidPos)
	mustExec(r.t, r.db, fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='%s', MASTER_PORT=%s, MASTER_USER='%s', MASTER_PASSWORD='%s', "+
		"MASTER_USE_GTID=slave_pos, MASTER_SSL=1, MASTER_SSL_CA='%s', MASTER_SSL_VERIFY_SERVER_CERT=1, MASTER_CONNECT_RETRY=1",
		host, port, r.info.ReplUser, r.info.ReplPass, r.ca))
	mustExec(r.t, r.db, "START SLAVE")
}

func (r *outsideReplica) status() map[string]string {
	r.t.Helper()
	m, err := mysqld.QueryRowMap(context.Background(), r.db, "SHOW SLAVE STATUS")
	if err != nil {
		r.t.Fatal(err)
	}
	return m
}

// awaitRows waits until the replica holds n rows in e2e.o, failing at
// once if a replication thread stops.
func (r *outsideReplica) awaitRows(n int) {
	r.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var got int
		err := r.db.QueryRow("SELECT COUNT(*) FROM e2e.o").Scan(&got)
		if err == nil && got == n {
			return
		}
		st := r.status()
		if st["Slave_IO_Running"] == "No" || st["Slave_SQL_Running"] == "No" {
			r.t.Fatalf("outside replica stopped: IO %s %s; SQL %s %s", st["Last_IO_Errno"], st["Last_IO_Error"], st["Last_SQL_Errno"], st["Last_SQL_Error"])
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("outside replica has %d rows (%v), want %d; IO=%s %s", got, err, n, st["Slave_IO_Running"], st["Last_IO_Error"])
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// awaitRefused waits until the IO thread stops with error 1236 and
// returns its message.
func (r *outsideReplica) awaitRefused() string {
	r.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := r.status()
		if st["Last_IO_Errno"] == "1236" && st["Slave_IO_Running"] == "No" {
			return st["Last_IO_Error"]
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("no error 1236: IO=%s %s %s", st["Slave_IO_Running"], st["Last_IO_Errno"], st["Last_IO_Error"])
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// awaitFirstGTID waits until node id's log was compacted past sequence
// number seq: its oldest position held is at seq or later.
func awaitFirstGTID(t *testing.T, c *localcluster.Cluster, id uint32, seq uint64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := c.Status(context.Background(), id)
		if err == nil {
			if g, err := binlog.ParseGTID(st.FirstGtid); err == nil && g.Seq >= seq {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %d's log was not compacted to sequence number %d within 30s (status %v, %v)", id, seq, st, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func insertRows(t *testing.T, db *sql.DB, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		mustExec(t, db, "INSERT INTO e2e.o VALUES (?, ?)", i, fmt.Sprintf("row %d", i))
	}
}

// TestOutsideReplica: a plain MariaDB (own datadir and port, not a
// member) replicates from a node's endpoint with the account cluster.json
// lists, over TLS with the server certificate checked: from a GTID
// position the log holds it receives the rows written through the
// cluster, and it follows another node's endpoint after a move. A
// position the compacted log no longer holds (the very start, an old
// GTID) and one from another server lineage get error 1236 naming the
// oldest position held and the way out (a backup).
func TestOutsideReplica(t *testing.T) {
	outside := startOutsideMariaDB(t, 4001)
	// A 1 s retention compacts the log as soon as the members applied it.
	c, master := localcluster.StartSpecForTest(t, localcluster.Spec{BinDir: binDir, Nodes: 3, LeaseDuration: retentionLease, LogRetention: time.Second})
	db, err := c.AppDB(c.MySQLAddr(master))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	start := time.Now()
	mustExec(t, db, "CREATE DATABASE e2e")
	mustExec(t, db, "CREATE TABLE e2e.o (id INT PRIMARY KEY, v VARCHAR(20))")
	insertRows(t, db, 1, 5)
	seed := awaitSameData(t, c, "e2e.o")
	follower := uint32(1)
	if follower == master {
		follower = 2
	}
	awaitFirstGTID(t, c, follower, 2)
	t.Logf("%v: the log is compacted; an outside replica starts", time.Since(start))
	r := outside(c)

	// Positions the log no longer holds.
	r.follow(follower, "")
	if msg := r.awaitRefused(); !strings.Contains(msg, "compacted up to GTID") || !strings.Contains(msg, "binlogd backup") {
		t.Fatalf("empty position: %s", msg)
	}
	t.Logf("%v: the empty position refused", time.Since(start))
	old := fmt.Sprintf("0-%d-1", seed.Server)
	r.follow(follower, old)
	if msg := r.awaitRefused(); !strings.Contains(msg, "before the log's first retained GTID") || !strings.Contains(msg, "binlogd backup") {
		t.Fatalf("position %s: %s", old, msg)
	}
	t.Logf("%v: %s refused", time.Since(start), old)
	lineage := fmt.Sprintf("0-77-%d", seed.Seq)
	r.follow(follower, lineage)
	if msg := r.awaitRefused(); !strings.Contains(msg, "not in the log") || !strings.Contains(msg, "binlogd backup") {
		t.Fatalf("position %s of another lineage: %s", lineage, msg)
	}

	t.Logf("%v: refused positions checked", time.Since(start))
	// Seed the replica as a backup would (the table and its rows, at the
	// cluster's GTID), then follow the log from there.
	mustExec(t, r.db, "SET SESSION sql_log_bin=0")
	mustExec(t, r.db, "CREATE DATABASE e2e")
	mustExec(t, r.db, "CREATE TABLE e2e.o (id INT PRIMARY KEY, v VARCHAR(20))")
	insertRows(t, r.db, 1, 5)
	r.follow(follower, seed.String())
	insertRows(t, db, 6, 20)
	r.awaitRows(20)
	if st := r.status(); st["Master_SSL_Allowed"] != "Yes" || st["Master_SSL_Verify_Server_Cert"] != "Yes" {
		t.Fatalf("replica not over verified TLS: %v %v", st["Master_SSL_Allowed"], st["Master_SSL_Verify_Server_Cert"])
	}

	t.Logf("%v: replicating from node %d", time.Since(start), follower)
	m := scrape(t, c, follower)
	if m[`phxgo_binlogd_repl_connections_total{account="outside"}`] < 4 || m["phxgo_binlogd_repl_refused_total"] < 3 ||
		m[`phxgo_binlogd_repl_connections_total{account="node"}`] < 1 || m["phxgo_binlogd_repl_denied_total"] != 0 {
		// denied must be 0: a real replica sends nothing the account may not run.
		t.Fatalf("node %d's endpoint metrics: outside logins %v, node logins %v, refused %v, denied %v", follower,
			m[`phxgo_binlogd_repl_connections_total{account="outside"}`], m[`phxgo_binlogd_repl_connections_total{account="node"}`],
			m["phxgo_binlogd_repl_refused_total"], m["phxgo_binlogd_repl_denied_total"])
	}
	// Failover: the same position is good on every endpoint (one log).
	other := uint32(6) - master - follower
	r.move(other)
	insertRows(t, db, 21, 30)
	r.awaitRows(30)
	var a, b string
	if err := db.QueryRow("CHECKSUM TABLE e2e.o").Scan(new(string), &a); err != nil {
		t.Fatal(err)
	}
	if err := r.db.QueryRow("CHECKSUM TABLE e2e.o").Scan(new(string), &b); err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatalf("checksum: cluster %s, outside replica %s", a, b)
	}
}

// TestOutsideReplicaAccount: on a running node's endpoint, the outside
// account may not run anything but a replica's queries (SELECT 1 is
// 1227), must use TLS, and strangers (no account, a wrong password, the
// app account, the capture name with a wrong password) get 1045.
func TestOutsideReplicaAccount(t *testing.T) {
	c, _ := localcluster.StartSpecForTest(t, localcluster.Spec{BinDir: binDir, Nodes: 3, LeaseDuration: retentionLease})
	info := readInfo(t, c)
	caPEM, err := os.ReadFile(filepath.Join(c.Spec.TLSPath(), mtls.CACertFile))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	addr := info.Nodes[0].ReplAddr
	host, _, _ := net.SplitHostPort(addr)
	tc := &tls.Config{RootCAs: pool, ServerName: host, MinVersion: tls.VersionTLS12}
	open := func(user, pw string, tc *tls.Config) *sql.DB {
		cfg := mysql.NewConfig()
		cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.Timeout, cfg.TLS = user, pw, "tcp", addr, 5*time.Second, tc
		conn, err := mysql.NewConnector(cfg)
		if err != nil {
			t.Fatal(err)
		}
		db := sql.OpenDB(conn)
		t.Cleanup(func() { db.Close() })
		return db
	}
	want := func(err error, code uint16, contains string) {
		t.Helper()
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != code || !strings.Contains(me.Message, contains) {
			t.Fatalf("got %v, want error %d containing %q", err, code, contains)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	db := open(info.ReplUser, info.ReplPass, tc)
	var dom string
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.gtid_domain_id").Scan(&dom); err != nil {
		t.Fatalf("a replica's connect query: %v", err)
	}
	_, err = db.ExecContext(ctx, "SELECT 1")
	want(err, 1227, "may only replicate")
	_, err = db.ExecContext(ctx, "SHOW BINARY LOGS")
	want(err, 1227, "may only replicate")

	want(open(info.ReplUser, info.ReplPass, nil).PingContext(ctx), 1045, "TLS only")
	for _, s := range []struct{ user, pw string }{
		{info.ReplUser, "wrong"}, {"root", ""}, {info.AppUser, info.AppPass}, {"phxgo_capture", "wrong"}, {"", ""},
	} {
		want(open(s.user, s.pw, tc).PingContext(ctx), 1045, "Access denied")
		want(open(s.user, s.pw, nil).PingContext(ctx), 1045, "Access denied")
	}
}

// readInfo reads the cluster's cluster.json.
func readInfo(t *testing.T, c *localcluster.Cluster) localcluster.Info {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.Spec.Dir, "cluster.json"))
	if err != nil {
		t.Fatal(err)
	}
	var info localcluster.Info
	if err := json.Unmarshal(b, &info); err != nil {
		t.Fatal(err)
	}
	return info
}
