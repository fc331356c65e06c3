package sqlproxy

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"phxgo/sqlproxy/topology"
)

// TestLostTransactions checks what a client is told when its
// transaction's backend connection is lost (txstate.go) and the
// idle-in-transaction bound for forwarded sessions (idletx.go), against a
// fake MariaDB. A backend connection is lost by killing it in the fake;
// the proxy holds it for the whole test (Hold), so the client's next
// statement meets the dead connection.
func TestLostTransactions(t *testing.T) {
	m := startFakes(t, 1)[0]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mustFake(t, m, "CREATE TABLE app.t (k INT PRIMARY KEY, v INT)")
	pa := startFakeProxy(t, 1, masterView(m), Linearizable, func(c *Config) {
		c.Hold = time.Hour
		c.IdleInTxTimeout = 500 * time.Millisecond
	})
	conn := func(t *testing.T, addr string) *sql.Conn { return fakeConn(t, ctx, addr) }
	exec := func(t *testing.T, c *sql.Conn, q string) {
		t.Helper()
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	wantErr := func(t *testing.T, c *sql.Conn, q string, code uint16, state string) {
		t.Helper()
		_, err := c.ExecContext(ctx, q)
		if me := mysqlErr(t, err); me.Number != code || string(me.SQLState[:]) != state {
			t.Fatalf("%s: want %d/%s, got %v", q, code, state, me)
		}
	}
	// killBackend kills c's backend connection (Kill returns once it is gone).
	killBackend := func(t *testing.T, c *sql.Conn) {
		t.Helper()
		var id uint32
		if err := c.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
			t.Fatal(err)
		}
		if !m.Kill(id) {
			t.Fatalf("no backend connection %d", id)
		}
	}
	// lostInTx is a session that began a transaction, inserted row k and
	// then lost the backend connection holding it.
	lostInTx := func(t *testing.T, k int) *sql.Conn {
		t.Helper()
		c := conn(t, pa.addr)
		exec(t, c, "BEGIN")
		exec(t, c, fmt.Sprintf("INSERT INTO t VALUES (%d, 0)", k))
		killBackend(t, c)
		return c
	}
	count := func(t *testing.T, k int) int {
		t.Helper()
		return m.Count(fmt.Sprintf("SELECT COUNT(*) FROM app.t WHERE k = %d", k))
	}

	t.Run("begin_lost_is_unknown_and_not_aborted", func(t *testing.T) {
		c := lostInTx(t, 1)
		// BEGIN would have committed the open transaction: unknown.
		wantErr(t, c, "BEGIN", 1927, "08S01")
		exec(t, c, "BEGIN") // no aborted state: database/sql never sends ROLLBACK here
		exec(t, c, "INSERT INTO t VALUES (2, 0)")
		exec(t, c, "COMMIT")
		if count(t, 1) != 0 || count(t, 2) != 1 {
			t.Fatalf("rows 1,2: %d %d", count(t, 1), count(t, 2))
		}
	})

	t.Run("dml_lost_is_rolled_back_then_begin_ends_it", func(t *testing.T) {
		c := lostInTx(t, 3)
		wantErr(t, c, "INSERT INTO t VALUES (4, 0)", 1290, "40001")
		wantErr(t, c, "INSERT INTO t VALUES (5, 0)", 1290, "40001") // aborted until the client ends it
		exec(t, c, "BEGIN")                                         // ends the rolled-back transaction
		exec(t, c, "INSERT INTO t VALUES (6, 0)")
		exec(t, c, "COMMIT")
		if count(t, 3)+count(t, 4)+count(t, 5) != 0 || count(t, 6) != 1 {
			t.Fatal("rows of the lost transaction committed, or the new one not")
		}
	})

	t.Run("commit_lost_is_unknown_and_not_aborted", func(t *testing.T) {
		c := lostInTx(t, 7)
		wantErr(t, c, "COMMIT", 1927, "08S01")
		exec(t, c, "INSERT INTO t VALUES (8, 0)") // autocommit works at once
		if count(t, 8) != 1 {
			t.Fatal("autocommit insert after the lost COMMIT missing")
		}
	})

	t.Run("rollback_lost_is_ok", func(t *testing.T) {
		c := lostInTx(t, 9)
		exec(t, c, "ROLLBACK")
		exec(t, c, "INSERT INTO t VALUES (10, 0)")
		if count(t, 9) != 0 || count(t, 10) != 1 {
			t.Fatal("rows 9,10")
		}
	})

	t.Run("autocommit_lost_is_unknown_then_recovers", func(t *testing.T) {
		c := conn(t, pa.addr)
		killBackend(t, c)
		wantErr(t, c, "INSERT INTO t VALUES (12, 0)", 1927, "08S01")
		exec(t, c, "INSERT INTO t VALUES (13, 0)") // the dead backend is never reused
		if count(t, 13) != 1 {
			t.Fatal("row 13 missing")
		}
	})

	t.Run("database_sql_begin_after_failed_begin", func(t *testing.T) {
		db := fakeDB(t, pa.addr, "app")
		db.SetMaxOpenConns(1)
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		exec(t, c, "BEGIN")
		killBackend(t, c)
		c.Close() // back to the pool with the proxy still inside the transaction
		if _, err := db.BeginTx(ctx, nil); err == nil {
			t.Fatal("BEGIN on a lost backend succeeded")
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatalf("BEGIN after a failed BEGIN: %v", err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO t VALUES (11, 0)"); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	})

	// Node 2's proxy forwards to node 1's (pa): its sessions are hops there.
	fwd := topology.View{MasterID: 1, MasterProxyAddr: pa.addr, MasterMySQLAddr: m.Addr(), SelfMySQLAddr: m.Addr()}
	pb := startFakeProxy(t, 2, fwd, Linearizable, nil)

	t.Run("forwarded_idle_in_transaction_released", func(t *testing.T) {
		mustFake(t, m, "INSERT INTO app.t VALUES (100, 0)")
		c := conn(t, pb.addr)
		exec(t, c, "BEGIN")
		exec(t, c, "UPDATE t SET v = 1 WHERE k = 100")
		// A direct session waits for the row lock far longer than the
		// idle bound: it succeeds only because the proxy rolled the
		// forwarded transaction back (else 1205 after 60 s).
		oc := fakeConn(t, ctx, m.Addr()) // straight to the fake, not through a proxy
		exec(t, oc, "SET SESSION innodb_lock_wait_timeout = 60")
		exec(t, oc, "UPDATE app.t SET v = 2 WHERE k = 100")
		// The client's transaction is gone: told so, definitely.
		wantErr(t, c, "UPDATE t SET v = 3 WHERE k = 100", 1290, "40001")
		exec(t, c, "ROLLBACK")
		var v int
		if err := c.QueryRowContext(ctx, "SELECT v FROM t WHERE k = 100").Scan(&v); err != nil || v != 2 {
			t.Fatalf("v=%d err=%v, want 2 (the forwarded update rolled back)", v, err)
		}
	})
}
