package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/config"
	"phxgo/binlogd/localcluster"
	backupdir "phxgo/binlogd/reseed"
)

// TestDisasterRecoveryFromBackup performs README "Disaster recovery" on
// real processes: a 3-node cluster loses its master and a replica (killed,
// their directories deleted); the surviving replica, with no quorum,
// still serves `binlogd backup`; a new 3-node cluster is built from that
// backup with `binlogd restore -new-cluster` on every node; it holds the
// rows, elects a master whose new transactions continue the backup's
// GTID, and replicates them to every node. Then one of its nodes is
// restored from the same backup (`binlogd restore`, no -new-cluster) and
// catches up from the log.
func TestDisasterRecoveryFromBackup(t *testing.T) {
	if _, err := exec.LookPath("mariadb-backup"); err != nil {
		t.Skip("mariadb-backup is not installed (scripts/install-deps.sh)")
	}
	c, master := localcluster.StartForTest(t, binDir, 3, 2*time.Second, false)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	db := appDBWith(t, c, master, "CREATE DATABASE app", "CREATE TABLE app.dr (id INT PRIMARY KEY, v VARCHAR(40))")
	defer db.Close()
	for i := 0; i < 100; i++ {
		mustExec(t, db, "INSERT INTO app.dr VALUES (?, ?)", i, fmt.Sprint("before-", i))
	}
	survivor := master%3 + 1
	awaitRows(ctx, t, c, survivor, 100)

	for _, id := range c.IDs() {
		if id == survivor {
			continue
		}
		for _, p := range []string{"binlogd", "mariadbd"} {
			if err := c.Kill(ctx, id, p); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.RemoveAll(c.Spec.NodeDir(int(id))); err != nil {
			t.Fatal(err)
		}
	}
	scfg, err := config.Load(filepath.Join(c.Spec.NodeDir(int(survivor)), "binlogd.json"))
	if err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(t.TempDir(), "backup")
	out, err := runBinlogd("backup", "-from", scfg.Self().GRPCAddr, "-out", backup, "-tls-dir", c.Spec.TLSPath(), "-progress", "100ms")
	if err != nil {
		t.Fatalf("backup from the survivor without a quorum: %v\n%s", err, out)
	}
	t.Logf("backup:\n%s", out)
	m, err := backupdir.ReadManifest(backup)
	if err != nil {
		t.Fatal(err)
	}
	base, err := binlog.ParseGTID(m.Position)
	if err != nil || m.SourceNode != survivor || !strings.Contains(out, "backup: received") {
		t.Fatalf("manifest %+v (%v), want node %d's position and a progress line", m, err, survivor)
	}
	for _, p := range []string{"binlogd", "mariadbd"} {
		if err := c.Kill(ctx, survivor, p); err != nil {
			t.Fatal(err)
		}
	}

	spec := localcluster.Spec{BinDir: binDir, Nodes: 3, LeaseDuration: 2 * time.Second, Dir: t.TempDir(), BasePort: localcluster.FreeBasePort(3)}
	if err := localcluster.Prepare(spec); err != nil {
		t.Fatal(err)
	}
	nc := localcluster.Open(spec)
	t.Cleanup(func() {
		if t.Failed() {
			nc.DumpLogs(t)
		}
		_ = nc.Stop()
	})
	for id := uint32(1); id <= 3; id++ {
		cfg := filepath.Join(spec.NodeDir(int(id)), "binlogd.json")
		if out, err := runBinlogd("restore", "-config", cfg, "-from", backup, "-new-cluster"); err != nil {
			t.Fatalf("restore node %d: %v\n%s", id, err, out)
		}
		got, err := config.Load(cfg)
		if err != nil || got.BaseGTID != m.Position {
			t.Fatalf("node %d's config after restore: base_gtid %q (%v), want %q", id, got.BaseGTID, err, m.Position)
		}
		if err := nc.StartNode(id); err != nil {
			t.Fatal(err)
		}
	}
	master2, err := nc.WaitHealthy(ctx, func(s string) { t.Log("new cluster waiting:", s) })
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range nc.IDs() {
		awaitRows(ctx, t, nc, id, 100)
	}
	db2, err := nc.AppDB(nc.MySQLAddr(master2))
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	for i := 100; i < 150; i++ {
		mustExec(t, db2, "INSERT INTO app.dr VALUES (?, ?)", i, fmt.Sprint("after-", i))
	}
	pos := awaitSameData(t, nc, "app.dr")
	for _, id := range nc.IDs() {
		awaitRows(ctx, t, nc, id, 150)
	}
	if pos.Domain != base.Domain || pos.Seq < base.Seq+50 {
		t.Fatalf("the new cluster is at %s: its writes do not continue the backup's %s", pos, base)
	}
	st, err := nc.Status(ctx, master2)
	if err != nil {
		t.Fatal(err)
	}
	if st.LastValidGtid != pos.String() {
		t.Fatalf("the new log's last valid GTID %q, MariaDB at %s", st.LastValidGtid, pos)
	}

	// A node of the running cluster restored from the same backup (no
	// -new-cluster) catches up from the log what followed the backup.
	replica := master2%3 + 1
	for _, p := range []string{"binlogd", "mariadbd"} {
		if err := nc.Kill(ctx, replica, p); err != nil {
			t.Fatal(err)
		}
	}
	for i := 150; i < 160; i++ {
		mustExec(t, db2, "INSERT INTO app.dr VALUES (?, ?)", i, fmt.Sprint("while-down-", i))
	}
	cfg := filepath.Join(spec.NodeDir(int(replica)), "binlogd.json")
	if out, err := runBinlogd("restore", "-config", cfg, "-from", backup, "-discard-old"); err != nil {
		t.Fatalf("restore node %d into its cluster: %v\n%s", replica, err, out)
	}
	if err := nc.StartNode(replica); err != nil {
		t.Fatal(err)
	}
	awaitRows(ctx, t, nc, replica, 160)
	awaitSameData(t, nc, "app.dr")
}

func runBinlogd(args ...string) (string, error) {
	out, err := exec.Command(filepath.Join(binDir, "binlogd"), args...).CombinedOutput()
	return string(out), err
}

// awaitRows waits until node id's MariaDB holds n rows in app.dr.
func awaitRows(ctx context.Context, t *testing.T, c *localcluster.Cluster, id uint32, n int) {
	t.Helper()
	db := rootDB(t, c, id)
	defer db.Close()
	var got int
	for {
		err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM app.dr").Scan(&got)
		if err == nil && got == n {
			return
		}
		if err == nil && got > n || ctx.Err() != nil {
			t.Fatalf("node %d holds %d rows of app.dr (%v), want %d", id, got, err, n)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}
