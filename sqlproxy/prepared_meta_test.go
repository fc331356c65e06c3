package sqlproxy

import (
	"context"
	"fmt"
	"testing"
)

// TestPreparedMetadataAcrossConnections: a prepared statement's results
// stay decodable while its column definitions change under one client
// statement. The proxy runs one client statement as many backend
// statements (re-prepared on pooled connections, spread over replicas),
// so it must not let a backend skip definitions the client does not hold
// (MariaDB's MARIADB_CLIENT_CACHE_METADATA: a proxy that passed it
// through made go-sql-driver decode an int64 for a string after an ALTER,
// and find no row after a SELECT ? changed type between backends).
func TestPreparedMetadataAcrossConnections(t *testing.T) {
	insts := startInstances(t, 2)
	m := insts[0]
	ctx := context.Background()
	setup := appDB(t, m.Addr(), "", false)
	mustExec(t, setup, "CREATE DATABASE app_meta")
	mustExec(t, setup, "CREATE TABLE app_meta.t (id INT PRIMARY KEY, v BIGINT)")
	mustExec(t, setup, "INSERT INTO app_meta.t VALUES (1, 42)")

	t.Run("alter_after_reprepare", func(t *testing.T) {
		lin := startProxy(t, 1, masterView(m), Linearizable, []string{m.Addr()}, func(c *Config) { c.Hold = 0 })
		a, b := appDB(t, lin.addr, "", false), appDB(t, lin.addr, "", false)
		a.SetMaxOpenConns(1)
		b.SetMaxOpenConns(1)
		st, err := a.PrepareContext(ctx, "SELECT v FROM app_meta.t WHERE id = ?")
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		var got any
		for range 2 {
			if err := st.QueryRowContext(ctx, 1).Scan(&got); err != nil {
				t.Fatal(err)
			}
		}
		mustExec(t, b, "DO 1") // takes a's pooled connection: a's next execute re-prepares
		mustExec(t, setup, "ALTER TABLE app_meta.t MODIFY v VARCHAR(20)")
		mustExec(t, setup, "UPDATE app_meta.t SET v = 'hello, world' WHERE id = 1")
		err = st.QueryRowContext(ctx, 1).Scan(&got)
		if bs, ok := got.([]byte); ok {
			got = string(bs)
		}
		if err != nil || got != "hello, world" {
			t.Fatalf("after the ALTER: %T %v, %v; want \"hello, world\"", got, got, err)
		}
	})

	t.Run("types_across_backends", func(t *testing.T) {
		rw := startProxy(t, 1, masterView(m, insts[1]), RWSplit, []string{m.Addr()},
			func(c *Config) { c.Hold = 0; c.ReadMasterPercentage = 0 })
		db := appDB(t, rw.addr, "", false)
		db.SetMaxOpenConns(1)
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		st, err := conn.PrepareContext(ctx, "SELECT ?")
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		q := func(arg any) {
			t.Helper()
			var got any
			err := st.QueryRowContext(ctx, arg).Scan(&got)
			if bs, ok := got.([]byte); ok {
				got = string(bs)
			}
			if err != nil || fmt.Sprint(got) != fmt.Sprint(arg) {
				t.Fatalf("SELECT %v: %v, %v", arg, got, err)
			}
		}
		q(int64(42)) // a replica
		q(int64(43))
		if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
			t.Fatal(err)
		}
		q("hello") // the master, inside the transaction
		if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
			t.Fatal(err)
		}
		q(int64(44)) // a replica again
	})
}
