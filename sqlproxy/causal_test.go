package sqlproxy

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"
)

// TestCausal observes read-your-writes in causal mode with a real
// replica (server_id 2) of the master (server_id 1). The replica is held
// back with FLUSH TABLES WITH READ LOCK (its SQL thread cannot apply),
// which makes every case deterministic: the plain rw-split read is stale,
// the causal read either waits on the replica until the lock is released
// or, with a short CausalWait, is served by the master. A GTID-behind
// replica is also reported unhealthy (health.go).
func TestCausal(t *testing.T) {
	insts := startInstances(t, 2)
	m, r := insts[0], insts[1]
	replicate(t, m, r)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	direct := appDB(t, m.Addr(), "", false)
	for _, q := range []string{"CREATE DATABASE app", "CREATE TABLE app.t (k INT PRIMARY KEY)"} {
		if _, err := direct.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	rdb := appDB(t, r.Addr(), "", false)
	await(t, ctx, "table on the replica", func() bool {
		_, err := rdb.ExecContext(ctx, "SELECT COUNT(*) FROM app.t")
		return err == nil
	})

	view := masterView(m, r)
	admin := func(c *Config) {
		c.AdminUser, c.AdminPassword = adminUser, adminPass
		c.HealthInterval = 50 * time.Millisecond
		c.Hold = 0
	}
	authAddrs := []string{m.Addr()}
	// freeze holds the replica's SQL thread until the returned func runs.
	freeze := func() func() {
		root, err := r.DB("")
		if err != nil {
			t.Fatal(err)
		}
		conn, err := root.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, "FLUSH TABLES WITH READ LOCK"); err != nil {
			t.Fatal(err)
		}
		return func() {
			conn.ExecContext(ctx, "UNLOCK TABLES")
			conn.Close()
			root.Close()
		}
	}
	// where runs q (with args: a server-side prepared statement) and
	// returns @@server_id and COUNT(*).
	where := func(db *sql.DB, k int, prepared bool) (id, n int) {
		t.Helper()
		var err error
		if prepared {
			err = db.QueryRowContext(ctx, "SELECT @@server_id, COUNT(*) FROM app.t WHERE k = ?", k).Scan(&id, &n)
		} else {
			err = db.QueryRowContext(ctx, fmt.Sprintf("SELECT @@server_id, COUNT(*) FROM app.t WHERE k = %d", k)).Scan(&id, &n)
		}
		if err != nil {
			t.Fatal(err)
		}
		return id, n
	}
	awaitHealthy := func(p *testProxy) {
		t.Helper()
		await(t, ctx, "replica healthy", func() bool { return len(p.srv.health.healthy(view)) == 1 })
	}

	t.Run("waits_on_replica", func(t *testing.T) {
		p := startProxy(t, 1, view, Causal, authAddrs, func(c *Config) { admin(c); c.CausalWait = 30 * time.Second })
		db := appDB(t, p.addr, "", false)
		db.SetMaxOpenConns(1)
		awaitHealthy(p)
		for k, prepared := range []bool{false, true} {
			k += 10
			unfreeze := freeze()
			if _, err := db.ExecContext(ctx, "INSERT INTO app.t VALUES (?)", k); err != nil {
				t.Fatal(err)
			}
			released := time.AfterFunc(300*time.Millisecond, unfreeze)
			id, n := where(db, k, prepared)
			released.Stop()
			unfreeze()
			if id != 2 || n != 1 {
				t.Fatalf("causal read (prepared=%v) on server %d saw %d rows; want the replica (2) with the write", prepared, id, n)
			}
		}
	})

	t.Run("falls_back_to_master", func(t *testing.T) {
		p := startProxy(t, 1, view, Causal, authAddrs, func(c *Config) { admin(c); c.CausalWait = 100 * time.Millisecond })
		plain := startProxy(t, 1, view, RWSplit, authAddrs, admin)
		db, pdb := appDB(t, p.addr, "", false), appDB(t, plain.addr, "", false)
		awaitHealthy(p)
		awaitHealthy(plain)
		unfreeze := freeze()
		defer unfreeze()
		if _, err := db.ExecContext(ctx, "INSERT INTO app.t VALUES (20)"); err != nil {
			t.Fatal(err)
		}
		if id, n := where(pdb, 20, false); id != 2 || n != 0 {
			t.Fatalf("rw-split read on %d saw %d rows: the frozen replica must be stale", id, n)
		}
		for _, prepared := range []bool{false, true} {
			if id, n := where(db, 20, prepared); id != 1 || n != 1 {
				t.Fatalf("causal read (prepared=%v) on %d saw %d rows; want the master (1) with the write", prepared, id, n)
			}
		}
		// A session that has not written reads the replica.
		if id, _ := where(appDB(t, p.addr, "", false), 20, false); id != 2 {
			t.Fatalf("read without writes on %d", id)
		}
	})

	t.Run("health_counts_gtid_behind", func(t *testing.T) {
		p := startProxy(t, 1, view, RWSplit, authAddrs, func(c *Config) { admin(c); c.MaxReplicaBehind = 0 })
		awaitHealthy(p)
		unfreeze := freeze()
		if _, err := direct.ExecContext(ctx, "INSERT INTO app.t VALUES (30)"); err != nil {
			t.Fatal(err)
		}
		state := func() replicaState {
			for _, st := range p.srv.health.snapshot() {
				return st
			}
			return replicaState{}
		}
		await(t, ctx, "replica unhealthy while a transaction behind", func() bool {
			st := state()
			return !st.Healthy && st.Behind >= 1 && st.Lag >= 0 && st.Lag < p.srv.cfg.MaxReplicaLag
		})
		if id, _ := where(appDB(t, p.addr, "", false), 30, false); id != 1 {
			t.Fatalf("read with the only replica behind ran on %d", id)
		}
		unfreeze()
		await(t, ctx, "replica healthy after catching up", func() bool {
			st := state()
			return st.Healthy && st.Behind == 0
		})
	})
}
