package sqlproxy

import (
	"context"
	"testing"
	"time"

	"phxgo/sqlproxy/topology"
)

// Routing against fake MariaDBs (fakeenv_test.go): where a statement
// runs is read from @@server_id and the fakes' tables.

// TestLeaseAndForwarding checks the linearizable rules with a static
// topology: an expired lease refuses statements without sending them,
// a non-master proxy forwards to the master's proxy, a master change moves
// idle sessions and aborts open transactions.
func TestLeaseAndForwarding(t *testing.T) {
	fs := startFakes(t, 2)
	a, b := fs[0], fs[1]
	ctx := context.Background()
	mustFake(t, a, "CREATE TABLE app.t (id INT PRIMARY KEY)")
	count := func(sql string) int { return a.Count(sql) }
	pa := startFakeProxy(t, 1, masterView(a), Linearizable, nil)

	t.Run("expired_lease_refuses_without_sending", func(t *testing.T) {
		db := fakeDB(t, pa.addr, "")
		db.SetMaxOpenConns(1)
		if id := serverID(t, db, "SELECT @@server_id"); id != 1 {
			t.Fatalf("server_id %d", id)
		}
		v := masterView(a)
		v.LeaseDeadline = time.Now().Add(-time.Millisecond)
		pa.topo.Set(v)
		_, err := db.ExecContext(ctx, "INSERT INTO app.t VALUES (1)")
		me := mysqlErr(t, err)
		if me.Number != 1290 || string(me.SQLState[:]) != "HY000" || me.Message != "phxgo: no master with a valid lease" {
			t.Fatalf("got %v", me)
		}
		if n := count("SELECT COUNT(*) FROM app.t"); n != 0 {
			t.Fatalf("the refused insert reached MariaDB: n=%d", n)
		}
		// A renewal while a statement waits lets it through.
		done := make(chan error, 1)
		go func() { _, err := db.ExecContext(ctx, "INSERT INTO app.t VALUES (2)"); done <- err }()
		pa.topo.Set(masterView(a))
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})

	// Node 2's proxy: not master, forwards to node 1's proxy.
	fwdView := topology.View{MasterID: 1, MasterProxyAddr: pa.addr, MasterMySQLAddr: a.Addr(), SelfMySQLAddr: b.Addr()}
	pb := startFakeProxy(t, 2, fwdView, Linearizable, nil)

	t.Run("forward_to_master_proxy", func(t *testing.T) {
		db := fakeDB(t, pb.addr, "app")
		if id := serverID(t, db, "SELECT @@server_id"); id != 1 {
			t.Fatalf("forwarded statement ran on %d", id)
		}
		var n int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM t WHERE id = ?", 2).Scan(&n); err != nil || n != 1 {
			t.Fatalf("n=%d err=%v", n, err)
		}
		// The master's proxy serves hops only as master: it never forwards.
		v := masterView(a)
		v.IsMaster, v.LeaseDeadline = false, time.Time{}
		v.MasterID, v.MasterProxyAddr = 2, pb.addr
		pa.topo.Set(v)
		defer pa.topo.Set(masterView(a))
		_, err := db.ExecContext(ctx, "INSERT INTO t VALUES (3)")
		if me := mysqlErr(t, err); me.Number != 1290 {
			t.Fatalf("want 1290 from the hop, got %v", me)
		}
	})

	t.Run("master_change", func(t *testing.T) {
		pa.topo.Set(masterView(a))
		db := fakeDB(t, pb.addr, "app")
		db.SetMaxOpenConns(2)
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		idle, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer idle.Close()
		if id := serverID(t, idle, "SELECT @@server_id"); id != 1 {
			t.Fatal(id)
		}
		if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, "INSERT INTO t VALUES (10)"); err != nil {
			t.Fatal(err)
		}
		// Node 2 becomes master.
		b.SetReadOnly(false)
		mustFake(t, b, "CREATE TABLE IF NOT EXISTS app.t (id INT PRIMARY KEY)")
		nv := masterView(b)
		nv.MasterID = 2
		pb.topo.Set(nv)
		v := nv
		v.IsMaster, v.LeaseDeadline, v.MasterProxyAddr = false, time.Time{}, pb.addr
		pa.topo.Set(v)

		if id := serverID(t, idle, "SELECT @@server_id"); id != 2 {
			t.Fatalf("idle session did not move: %d", id)
		}
		_, err = conn.ExecContext(ctx, "INSERT INTO t VALUES (11)")
		if me := mysqlErr(t, err); me.Number != 1290 || string(me.SQLState[:]) != "40001" {
			t.Fatalf("in-transaction statement: %v", me)
		}
		if _, err := conn.ExecContext(ctx, "INSERT INTO t VALUES (12)"); err == nil {
			t.Fatal("statement after a lost transaction must fail until ROLLBACK")
		}
		if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
			t.Fatal(err)
		}
		if n := b.Count("SELECT COUNT(*) FROM app.t WHERE id >= 10"); n != 0 {
			t.Fatalf("half-applied transaction on the new master: n=%d", n)
		}
		// The old master rolls back once the hop's end reaches it.
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		await(t, wctx, "the old master's transaction rolled back", func() bool {
			return count("SELECT COUNT(*) FROM app.t WHERE id >= 10") == 0
		})
		if id := serverID(t, conn, "SELECT @@server_id"); id != 2 {
			t.Fatalf("after ROLLBACK: %d", id)
		}
	})
}

// TestRWSplit observes, via @@server_id, where each Cetus rule sends a
// statement: master 1, replicas 2 and 3.
func TestRWSplit(t *testing.T) {
	fs := startFakes(t, 3)
	m := fs[0]
	view := masterView(m, fs[1], fs[2])
	ctx := context.Background()

	p := startFakeProxy(t, 1, view, RWSplit, func(c *Config) { c.Hold = 0 })
	db := fakeDB(t, p.addr, "")
	db.SetMaxOpenConns(1)

	seen := map[uint32]int{}
	for range 6 {
		seen[serverID(t, db, "SELECT @@server_id")]++
	}
	if seen[2] != 3 || seen[3] != 3 {
		t.Fatalf("round robin over replicas: %v", seen)
	}
	if id := serverID(t, db, "SELECT @@server_id FOR UPDATE"); id != 1 {
		t.Fatalf("locking read on %d", id)
	}
	if id := serverID(t, db, "SELECT @@server_id LOCK IN SHARE MODE"); id != 1 {
		t.Fatalf("share-locking read on %d", id)
	}
	if id := serverID(t, db, "/*#mode=readwrite*/ SELECT @@server_id"); id != 1 {
		t.Fatalf("readwrite hint on %d", id)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if id := serverID(t, tx, "SELECT @@server_id"); id != 1 {
		t.Fatalf("read in transaction on %d", id)
	}
	tx.Rollback()

	t.Run("session_state_keeps_the_master", func(t *testing.T) {
		// The replicas are read-only: a write that reached one would fail.
		mustFake(t, m, "CREATE TABLE app.w (k INT PRIMARY KEY)")
		c := fakeConn(t, ctx, p.addr)
		execOK(t, ctx, c, "INSERT INTO w VALUES (1)")
		if n := m.Count("SELECT COUNT(*) FROM app.w"); n != 1 {
			t.Fatalf("write on the master: %d rows", n)
		}
		for _, st := range []struct{ sql, until string }{
			{"SET autocommit=0", "SET autocommit=1"},
			{"START TRANSACTION READ ONLY", "COMMIT"},
		} {
			execOK(t, ctx, c, st.sql)
			for range 3 {
				if id := serverID(t, c, "SELECT @@server_id"); id != 1 {
					t.Fatalf("after %s: read on %d", st.sql, id)
				}
			}
			execOK(t, ctx, c, st.until)
			if id := serverID(t, c, "SELECT @@server_id"); id == 1 {
				t.Fatalf("after %s reads stay on the master", st.until)
			}
		}
		execOK(t, ctx, c, "CREATE TEMPORARY TABLE tmp (k INT)") // unreplayable: pinned
		for range 3 {
			if id := serverID(t, c, "SELECT @@server_id"); id != 1 {
				t.Fatalf("pinned session read on %d", id)
			}
		}
	})

	// Settings that send reads to the master; a readonly hint still wins.
	for name, set := range map[string]func(*Config){
		"master_preferred":           func(c *Config) { c.MasterPreferred = true },
		"read_master_percentage_100": func(c *Config) { c.ReadMasterPercentage = 100 },
	} {
		t.Run(name, func(t *testing.T) {
			p := startFakeProxy(t, 1, view, RWSplit, set)
			db := fakeDB(t, p.addr, "")
			if id := serverID(t, db, "SELECT @@server_id"); id != 1 {
				t.Fatalf("%s: read on %d", name, id)
			}
			if id := serverID(t, db, "/*#mode=readonly*/ SELECT @@server_id"); id == 1 {
				t.Fatalf("readonly hint must win over %s", name)
			}
		})
	}
	t.Run("no_healthy_replica", func(t *testing.T) {
		p := startFakeProxy(t, 1, masterView(m), RWSplit, nil)
		db := fakeDB(t, p.addr, "")
		if id := serverID(t, db, "SELECT @@server_id"); id != 1 {
			t.Fatalf("read on %d", id)
		}
		// Health checks on: the fakes do not replicate (no SHOW SLAVE
		// STATUS), so none is healthy and reads go to the master.
		for _, f := range fs {
			f.Users[adminUser] = adminPass
		}
		p2 := startFakeProxy(t, 1, view, RWSplit, func(c *Config) {
			c.AdminUser, c.AdminPassword = adminUser, adminPass
		})
		db2 := fakeDB(t, p2.addr, "")
		if id := serverID(t, db2, "SELECT @@server_id"); id != 1 {
			t.Fatalf("read with no healthy replica on %d", id)
		}
	})
	t.Run("hold_keeps_replica", func(t *testing.T) {
		p := startFakeProxy(t, 1, view, RWSplit, func(c *Config) { c.Hold = time.Hour })
		db := fakeDB(t, p.addr, "")
		db.SetMaxOpenConns(1)
		first := serverID(t, db, "SELECT @@server_id")
		for range 4 {
			if id := serverID(t, db, "SELECT @@server_id"); id != first {
				t.Fatalf("hold window: %d then %d", first, id)
			}
		}
	})
}
