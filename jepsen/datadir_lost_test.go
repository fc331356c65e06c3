package jepsen

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"phxgo/jepsen/cluster"
	"phxgo/jepsen/netns"
	"phxgo/jepsen/phxcluster"
	"phxgo/jepsen/workload"
	pb "phxgo/proto"
)

// TestLostDatadirIsReseeded: a node whose MariaDB datadir InnoDB cannot
// recover must say so and stop, and the operator's reseed must bring it
// back with every acknowledged row. TestJepsenPowerShort seed 1 found
// such a node (MariaDB 10.11 refused its datadir after power losses:
// "Missing FILE_CREATE, FILE_DELETE or FILE_MODIFY before
// FILE_CHECKPOINT"; the disk model, lazyfs, had lost a new .ibd's
// fallocate'd size, since fixed); it was restarted for 3 minutes and
// failed the same way every time. Here
// the damage is made on purpose: a replica's redo log loses its
// checkpoint blocks while the node is down. binlogd must stop retrying
// (UNSAFE, reseed_needed, the InnoDB error quoted), and phxcluster's
// WaitHealthy reseeds it, as the power nemesis's heal would.
func TestLostDatadirIsReseeded(t *testing.T) {
	bin := shortCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	ns, err := netns.Create(ctx, fmt.Sprintf("%s%dd", NSPrefix, os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	spec := cluster.LaunchSpec{Dir: t.TempDir(), LogDir: t.TempDir(), NetNS: ns.Name, Hosts: Hosts(3), Nodes: 3,
		LeaseDuration: 3 * time.Second, BinDir: bin, Command: ns.Command, Dial: ns.DialContext}
	cl, err := phxcluster.Launcher(phxcluster.Options{})(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	c := cl.(*phxcluster.Cluster)
	defer c.Stop()
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	m, err := c.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := m%3 + 1
	node := func(id uint32) cluster.Node { return c.Nodes()[id-1] }
	db := dbAt(t, ns, node(m), node(m).ProxyAddr)
	defer db.Close()
	mustExec(t, db, "CREATE TABLE lost (k INT PRIMARY KEY)")
	for k := 1; k <= 50; k++ {
		mustExec(t, db, fmt.Sprintf("INSERT INTO lost VALUES (%d)", k))
	}
	if err := c.WaitHealthy(ctx); err != nil { // r holds the rows
		t.Fatal(err)
	}

	if err := c.KillNode(r); err != nil {
		t.Fatal(err)
	}
	redo := filepath.Join(c.Local().Spec.NodeDir(int(r)), "mysql", "data", "ib_logfile0")
	f, err := os.OpenFile(redo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(strings.Repeat("\xde", 8192)), 4096); err != nil { // both checkpoint blocks
		t.Fatal(err)
	}
	f.Close()
	if err := c.Restart(ctx, r); err != nil {
		t.Fatal(err)
	}
	var st *pb.NodeStatus
	for st == nil || st.Role != pb.Role_ROLE_UNSAFE {
		select {
		case <-ctx.Done():
			t.Fatalf("n%d never went UNSAFE with a lost datadir (last status %v)", r, st)
		case <-time.After(500 * time.Millisecond):
		}
		st, _ = c.Local().Status(ctx, r)
	}
	if !st.ReseedNeeded || !strings.Contains(st.UnsafeReason, "No valid checkpoint was found") || !strings.Contains(st.UnsafeReason, "binlogd reseed") {
		t.Fatalf("n%d: reseed_needed %v, reason %q; want reseed_needed and the InnoDB error with what to do", r, st.ReseedNeeded, st.UnsafeReason)
	}

	if err := c.WaitHealthy(ctx); err != nil { // reseeds r
		t.Fatal(err)
	}
	if rs := c.Reseeded(); len(rs) != 1 || !strings.HasPrefix(rs[0], fmt.Sprintf("n%d ", r)) {
		t.Fatalf("reseeded %q, want n%d once", rs, r)
	}
	mustExec(t, db, "INSERT INTO lost VALUES (51)")
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	rdb := dbAt(t, ns, node(r), node(r).MySQLAddr)
	defer rdb.Close()
	var n, sum int
	if err := rdb.QueryRowContext(ctx, "SELECT COUNT(*), COALESCE(SUM(k), 0) FROM lost").Scan(&n, &sum); err != nil {
		t.Fatal(err)
	}
	if n != 51 || sum != 51*52/2 {
		t.Fatalf("reseeded n%d holds %d rows (sum %d), want 51 (sum %d)", r, n, sum, 51*52/2)
	}
}

func dbAt(t *testing.T, ns *netns.NS, n cluster.Node, addr string) *sql.DB {
	t.Helper()
	registerDialer(ns)
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName = n.User, n.Password, dialNet, addr, workload.Schema
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = 2*time.Second, 30*time.Second, 30*time.Second
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func mustExec(t *testing.T, db *sql.DB, q string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}
