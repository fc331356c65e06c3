package sqlproxy

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"phxgo/binlogd/mysqld"
)

func TestLinearizable(t *testing.T) {
	insts := startInstances(t, 1)
	m := insts[0]
	p := startProxy(t, 1, masterView(m), Linearizable, []string{m.Addr()}, nil)
	ctx := context.Background()
	db := appDB(t, p.addr, "", true)

	t.Run("ddl_dml_tx", func(t *testing.T) {
		if _, err := db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS app"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, "CREATE TABLE app.kv (k INT PRIMARY KEY, v VARCHAR(64))"); err != nil {
			t.Fatal(err)
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO app.kv VALUES (1,'a'),(2,'b')"); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		tx, _ = db.BeginTx(ctx, nil)
		if _, err := tx.ExecContext(ctx, "INSERT INTO app.kv VALUES (?, ?)", 3, "c"); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM app.kv").Scan(&n); err != nil || n != 1 {
			t.Fatalf("count=%d err=%v", n, err)
		}
		if id := serverID(t, db, "SELECT @@server_id"); id != 1 {
			t.Fatalf("server_id %d", id)
		}
	})

	t.Run("prepared", func(t *testing.T) {
		st, err := db.PrepareContext(ctx, "SELECT v FROM app.kv WHERE k = ?")
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		for range 3 {
			var v string
			if err := st.QueryRowContext(ctx, 3).Scan(&v); err != nil || v != "c" {
				t.Fatalf("v=%q err=%v", v, err)
			}
		}
		ins, err := db.PrepareContext(ctx, "INSERT INTO app.kv VALUES (?, ?)")
		if err != nil {
			t.Fatal(err)
		}
		defer ins.Close()
		for k := 10; k < 20; k++ {
			if _, err := ins.ExecContext(ctx, k, fmt.Sprint("v", k)); err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("multi_statements", func(t *testing.T) {
		rows, err := db.QueryContext(ctx, "SELECT 1; SELECT 2, 3")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var a, b, c int
		if !rows.Next() || rows.Scan(&a) != nil || a != 1 {
			t.Fatal("first result")
		}
		if rows.Next() || !rows.NextResultSet() || !rows.Next() || rows.Scan(&b, &c) != nil || b != 2 || c != 3 {
			t.Fatalf("second result: %v", rows.Err())
		}
	})

	t.Run("large_result", func(t *testing.T) {
		if _, err := db.ExecContext(ctx, "CREATE TABLE app.big (id INT PRIMARY KEY, pad CHAR(100))"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, "INSERT INTO app.big SELECT seq, REPEAT('x', 100) FROM app.seq_1_to_100000"); err != nil {
			t.Fatal(err)
		}
		rows, err := db.QueryContext(ctx, "SELECT id, pad FROM app.big ORDER BY id")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		n, sum := 0, 0
		for rows.Next() {
			var id int
			var pad string
			if err := rows.Scan(&id, &pad); err != nil {
				t.Fatal(err)
			}
			n++
			sum += id
		}
		if rows.Err() != nil || n != 100000 || sum != 100000*100001/2 {
			t.Fatalf("n=%d sum=%d err=%v", n, sum, rows.Err())
		}
	})

	t.Run("errors_pass_through", func(t *testing.T) {
		_, err := db.ExecContext(ctx, "INSERT INTO app.kv VALUES (3, 'dup')")
		if me := mysqlErr(t, err); me.Number != 1062 || string(me.SQLState[:]) != "23000" {
			t.Fatalf("dup: %v", me)
		}
		_, err = db.ExecContext(ctx, "SELEC 1")
		if me := mysqlErr(t, err); me.Number != 1064 || string(me.SQLState[:]) != "42000" {
			t.Fatalf("syntax: %v", me)
		}
		_, err = db.ExecContext(ctx, "SET GLOBAL read_only=ON") // app has no SUPER
		if me := mysqlErr(t, err); me.Number != 1227 {
			t.Fatalf("privilege: %v", me)
		}
	})

	t.Run("wrong_password", func(t *testing.T) {
		cfgDSN := fmt.Sprintf("app:nope@tcp(%s)/", p.addr)
		db2 := openDSN(t, cfgDSN)
		err := db2.PingContext(ctx)
		if me := mysqlErr(t, err); me.Number != 1045 {
			t.Fatalf("want 1045, got %v", me)
		}
	})

	t.Run("unknown_database", func(t *testing.T) {
		err := appDB(t, p.addr, "nope", false).PingContext(ctx)
		// MariaDB's own answer, relayed: 1049, or 1044 when the app
		// account is confined to its databases (mysqld.Accounts.AppDatabases)
		// and may not learn whether another exists.
		if me := mysqlErr(t, err); me.Number != 1049 && me.Number != 1044 {
			t.Fatalf("want 1049 or 1044, got %v", me)
		}
	})

	t.Run("mariadb_cli", func(t *testing.T) {
		host, port, _ := net.SplitHostPort(p.addr)
		out, err := exec.Command("mariadb", "-h", host, "-P", port, "-uapp", "-papp-secret", "-N", "-B",
			"-e", "USE app; SELECT v FROM kv WHERE k=3; SELECT @@server_id; BEGIN; INSERT INTO kv VALUES (100,'cli'); COMMIT; SELECT COUNT(*) FROM kv WHERE k=100").CombinedOutput()
		if err != nil {
			t.Fatalf("mariadb: %v\n%s", err, out)
		}
		if got := strings.Fields(string(out)); strings.Join(got, ",") != "c,1,1" {
			t.Fatalf("mariadb output %q", out)
		}
		out, err = exec.Command("mariadb", "-h", host, "-P", port, "-uapp", "-papp-secret", "-e", "SELECT * FROM app.nope").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "ERROR 1146 (42S02)") {
			t.Fatalf("want ERROR 1146 (42S02), got %v %s", err, out)
		}
	})

	t.Run("source_ip", func(t *testing.T) {
		src := net.ParseIP("127.0.0.2")
		p2 := startProxy(t, 1, masterView(m), Linearizable, []string{m.Addr()}, func(c *Config) { c.SourceIP = src })
		var host string
		q := "SELECT SUBSTRING_INDEX(host, ':', 1) FROM information_schema.processlist WHERE id = CONNECTION_ID()"
		if err := appDB(t, p2.addr, "", false).QueryRowContext(ctx, q).Scan(&host); err != nil {
			t.Fatal(err)
		}
		if host != src.String() {
			t.Fatalf("backend sees the proxy at %q, want %s", host, src)
		}
	})

	t.Run("malformed_packet_closes_only_that_client", func(t *testing.T) {
		nc, err := net.Dial("tcp", p.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		buf := make([]byte, 1024)
		if _, err := nc.Read(buf); err != nil { // greeting
			t.Fatal(err)
		}
		nc.Write([]byte{5, 0, 0, 1, 0xde, 0xad, 0xbe, 0xef, 0x00})
		nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			if _, err := nc.Read(buf); err != nil {
				break // closed by the proxy
			}
		}
		if id := serverID(t, db, "SELECT @@server_id"); id != 1 {
			t.Fatal("other clients still served")
		}
	})
}

func openDSN(t *testing.T, dsn string) interface {
	PingContext(context.Context) error
} {
	t.Helper()
	db, err := sqlOpen(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

var _ = mysqld.DefaultAccounts
