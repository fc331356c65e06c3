package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"phxgo/binlogd/localcluster"
	pb "phxgo/proto"
)

// A master dies with a DDL the cluster never chose: its replicas' binlogds
// are down, so DROP TABLE waits for an ACK that cannot come; then the
// master's binlogd and mariadbd are killed. MariaDB has applied the DROP
// already and a binlog cut cannot bring the table back. The replicas come
// back, elect a new master that still has the table; the old master, when
// its binlogd restarts, must refuse to cut the DDL and rejoin (a fork) and
// report UNSAFE with a reseed message instead.
func TestDDLCutMarksOldMasterUnsafe(t *testing.T) {
	c, master := localcluster.StartForTest(t, binDir, 3, failoverLease, false)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	db := appDBWith(t, c, master, "CREATE DATABASE e2e", "CREATE TABLE e2e.d (id INT PRIMARY KEY)", "INSERT INTO e2e.d VALUES (1)")
	defer db.Close()
	awaitSameData(t, c, "e2e.d")

	var others []uint32
	for _, id := range c.IDs() {
		if id != master {
			others = append(others, id)
			if err := c.Kill(ctx, id, "binlogd"); err != nil {
				t.Fatal(err)
			}
		}
	}
	dropped := make(chan error, 1)
	go func() { _, err := db.ExecContext(ctx, "DROP TABLE e2e.d"); dropped <- err }()
	root := rootDB(t, c, master)
	for waiting := 0; waiting != 1; {
		var name string
		if err := root.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_master_wait_sessions'").Scan(&name, &waiting); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-dropped:
			t.Fatalf("DROP TABLE returned without a majority: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	root.Close()
	for _, p := range []string{"binlogd", "mariadbd"} {
		if err := c.Kill(ctx, master, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-dropped; err == nil {
		t.Fatal("DROP TABLE acknowledged without a majority")
	}

	for _, id := range others {
		if err := c.StartNode(id); err != nil {
			t.Fatal(err)
		}
	}
	newMaster := awaitRole(ctx, t, c, others, pb.Role_ROLE_MASTER)
	t.Logf("node %d is master; restarting the old master %d", newMaster, master)
	if err := c.StartNode(master); err != nil {
		t.Fatal(err)
	}
	awaitRole(ctx, t, c, []uint32{master}, pb.Role_ROLE_UNSAFE)
	st, err := c.Status(ctx, master)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(st.UnsafeReason, "cut DDL") || !strings.Contains(st.UnsafeReason, "reseed") {
		t.Fatalf("unsafe for another reason: %s", st.UnsafeReason)
	}
	t.Logf("old master %d: UNSAFE: %s", master, st.UnsafeReason)

	// The cluster never chose the DROP: the table and its row are there.
	ndb := appDB(t, c, newMaster)
	defer ndb.Close()
	var n int
	if err := ndb.QueryRowContext(ctx, "SELECT COUNT(*) FROM e2e.d").Scan(&n); err != nil || n != 1 {
		t.Fatalf("new master's e2e.d: %d rows, %v", n, err)
	}
}

// awaitRole waits until one of ids reports role and returns it.
func awaitRole(ctx context.Context, t *testing.T, c *localcluster.Cluster, ids []uint32, role pb.Role) uint32 {
	t.Helper()
	for {
		for _, id := range ids {
			if st, err := c.Status(ctx, id); err == nil && st.Role == role {
				return id
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("none of %v became %v: %v", ids, role, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
