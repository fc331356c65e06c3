package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/localcluster"
	pb "phxgo/proto"
)

func gtidPos(ctx context.Context, db *sql.DB) (binlog.GTID, error) {
	var s string
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.gtid_current_pos").Scan(&s); err != nil {
		return binlog.GTID{}, err
	}
	return binlog.ParseGTID(s)
}

// watch runs check every 100ms in the background until stop is called
// (it returns once the running check has returned): for the invariants a
// test asserts for as long as it runs.
func watch(check func(ctx context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			check(ctx)
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() { cancel(); <-done }
}

// awaitSameData waits until every node's MariaDB is at the same GTID
// position and then compares CHECKSUM TABLE of tables on all of them.
func awaitSameData(t *testing.T, c *localcluster.Cluster, tables ...string) binlog.GTID {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dbs := map[uint32]*sql.DB{}
	for _, id := range c.IDs() {
		db := rootDB(t, c, id)
		defer db.Close()
		dbs[id] = db
	}
	var pos binlog.GTID
	for {
		same, desc := true, ""
		pos = binlog.GTID{}
		for id, db := range dbs {
			g, err := gtidPos(ctx, db)
			if err != nil {
				same = false
				desc += fmt.Sprintf(" node%d:%v", id, err)
				continue
			}
			desc += fmt.Sprintf(" node%d:%s", id, g)
			if pos.IsZero() {
				pos = g
			} else if g != pos {
				same = false
			}
		}
		if same {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("nodes never reached one GTID position:%s", desc)
		case <-time.After(100 * time.Millisecond):
		}
	}
	for _, table := range tables {
		sums := map[uint32]int64{}
		for id, db := range dbs {
			var name string
			var sum sql.NullInt64
			if err := db.QueryRowContext(ctx, "CHECKSUM TABLE "+table).Scan(&name, &sum); err != nil {
				t.Fatalf("node %d: CHECKSUM TABLE %s: %v", id, table, err)
			}
			sums[id] = sum.Int64
		}
		for id, s := range sums {
			if s != sums[c.IDs()[0]] {
				t.Fatalf("CHECKSUM TABLE %s differs: %v (node %d)", table, sums, id)
			}
		}
	}
	return pos
}

func mustExec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// appDB opens a pool as the application account on node id's MariaDB,
// failing the test when it cannot; the caller closes it.
func appDB(t *testing.T, c *localcluster.Cluster, id uint32) *sql.DB {
	t.Helper()
	db, err := c.AppDB(c.MySQLAddr(id))
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// appDBWith is appDB with stmts run through it first: the schema a test
// writes to, created through the master. The caller closes it.
func appDBWith(t *testing.T, c *localcluster.Cluster, id uint32, stmts ...string) *sql.DB {
	t.Helper()
	db := appDB(t, c, id)
	for _, s := range stmts {
		mustExec(t, db, s)
	}
	return db
}

// rootDB is appDB as root, for reading server state; the caller closes it.
func rootDB(t *testing.T, c *localcluster.Cluster, id uint32) *sql.DB {
	t.Helper()
	db, err := c.RootDB(id)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// awaitReadyMaster waits until node id reports itself the ready master.
func awaitReadyMaster(ctx context.Context, t *testing.T, c *localcluster.Cluster, id uint32) {
	t.Helper()
	for {
		st, err := c.Status(ctx, id)
		if err == nil && st.Role == pb.Role_ROLE_MASTER && st.Ready {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("node %d never became a ready master: %v %v", id, st, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
