package sqlproxy

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"phxgo/sqlproxy/topology"
)

// TestTxNeverSpansTwoConnections: the Jepsen find of a split transaction
// (jepsen/checker/testdata/rwsplit-split-txn-seed2.jsonl.gz). A non-master
// proxy (node 3, read/write split) reads from A while A is a replica; A
// then becomes master and lends the proxy a read window, so a transaction
// runs straight on A's MariaDB, on the very connection the replica read
// used (same address, same pool key). The window then ends inside the
// transaction and the route moves to forwarding. The transaction must not
// go on over the new route: its connection is closed (MariaDB rolls back)
// and the client gets 1290/40001. Before the fix that connection kept the
// replica's route kind, so acquire put it back in the pool with the
// transaction open; the next INSERT committed alone through the master's
// proxy, COMMIT said OK, and the next BEGIN met the open transaction
// (1568).
func TestTxNeverSpansTwoConnections(t *testing.T) {
	fs := startFakes(t, 2)
	a, b := fs[0], fs[1]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mustFake(t, a, "CREATE TABLE app.t (id INT PRIMARY KEY)")
	pa := startFakeProxy(t, 1, masterView(a), Linearizable, nil) // A's own proxy

	// Node 3's proxy. Before the failover A is a replica and no master is
	// reachable; Hold 0 hands the replica connection to the pool at once.
	before := topology.View{MasterID: 2, Replicas: []topology.Replica{{ID: 1, MySQLAddr: a.Addr()}}}
	pc := startFakeProxy(t, 3, before, RWSplit, func(c *Config) { c.Hold = 0 })
	db := fakeDB(t, pc.addr, "app")
	db.SetMaxOpenConns(1)
	if id := serverID(t, db, "SELECT @@server_id"); id != 1 {
		t.Fatalf("replica read ran on %d, want A (1)", id)
	}

	// A is master and lends node 3 a window: one hop to A's MariaDB.
	after := topology.View{MasterID: 1, MasterMySQLAddr: a.Addr(), MasterProxyAddr: pa.addr,
		Replicas: []topology.Replica{{ID: 2, MySQLAddr: b.Addr()}}}
	windowed := after
	windowed.Window = topology.Window{MasterID: 1, MySQLAddr: a.Addr(), Until: time.Now().Add(time.Hour)}
	pc.topo.Set(windowed)

	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelSerializable})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO t VALUES (?)", 137); err != nil {
		t.Fatal(err)
	}
	// The window ends inside the transaction: the route moves to forwarding.
	pc.topo.Set(after)
	_, err = tx.ExecContext(ctx, "INSERT INTO t VALUES (?)", 138)
	if err == nil {
		tx.Commit()
		t.Fatal("a statement after the route moved ran outside the transaction's connection")
	}
	if me := mysqlErr(t, err); me.Number != 1290 || string(me.SQLState[:]) != "40001" {
		t.Fatalf("want 1290/40001 (rolled back), got %v", me)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatalf("rollback after the lost transaction: %v", err)
	}
	await(t, ctx, "the lost transaction rolled back", func() bool { return a.Count("SELECT COUNT(*) FROM app.t") == 0 })

	// Nothing of it is left open anywhere: the next transaction (forwarded)
	// begins and commits.
	tx, err = db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelSerializable})
	if err != nil {
		t.Fatalf("next BEGIN: %v", err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO t VALUES (?)", 146); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	// And back on the direct route (the pool holds A's connections too).
	pc.topo.Set(windowed)
	tx, err = db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelSerializable})
	if err != nil {
		t.Fatalf("BEGIN on the direct route again: %v", err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO t VALUES (?)", 147); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range mustFake(t, a, "SELECT id FROM app.t ORDER BY id") {
		ids = append(ids, *r[0])
	}
	if len(ids) != 2 || ids[0] != "146" || ids[1] != "147" {
		t.Fatalf("committed rows %v, want [146 147]", ids)
	}

	// BeginTx with an isolation level sends SET TRANSACTION (next
	// transaction only) each time: it is not session state, so many
	// transactions neither grow the replay log nor pin the session, and
	// reads still go to the replica.
	for i := range maxSets + 6 {
		tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelSerializable})
		if err != nil {
			t.Fatalf("transaction %d: %v", i, err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if id := serverID(t, db, "SELECT @@server_id"); id != 2 {
		t.Fatalf("read after %d transactions ran on %d, want the replica (2)", maxSets+6, id)
	}
}
