package reseed_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"phxgo/binlogd/localcluster"
	"phxgo/binlogd/mtls"
	pb "phxgo/proto"
)

var binDir string

func TestMain(m *testing.M) {
	code := func() int {
		if _, err := exec.LookPath("mariadb-backup"); err != nil {
			fmt.Fprintln(os.Stderr, "mariadb-backup is not installed (scripts/install-deps.sh): skipping the cluster tests")
			return m.Run()
		}
		dir, err := os.MkdirTemp("", "phxgo-reseed-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		if err := localcluster.BuildBinaries(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		binDir = dir
		return m.Run()
	}()
	os.Exit(code)
}

func needCluster(t *testing.T) {
	t.Helper()
	if binDir == "" {
		t.Skip("mariadb-backup not installed")
	}
}

// TestReseedReplica: a replica whose datadir is corrupted is reseeded
// from another replica with `binlogd reseed` (real mariadb-backup over
// mTLS gRPC), shows progress, starts, replicates what was written while
// it was down and after, and ends with the master's CHECKSUM TABLE.
// Along the way: reseed refuses while the node runs; the master refuses
// to serve without -force; a proxy certificate, and a node certificate
// asking for another node, get PermissionDenied. Then a fourth node is
// added by reseed (localcluster.AddNodeByReseed) and replicates too.
func TestReseedReplica(t *testing.T) {
	needCluster(t)
	c, master := localcluster.StartForTest(t, binDir, 3, 3*time.Second, false)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	broken := master%3 + 1
	source := broken%3 + 1
	db := appDB(t, c, master)
	mustExec(t, db, "CREATE DATABASE app")
	mustExec(t, db, "CREATE TABLE app.t (id INT AUTO_INCREMENT PRIMARY KEY, pad VARCHAR(1000))")
	insertRows(t, db, 20, 500)
	waitCaughtUp(ctx, t, c, master, broken)

	cfg := filepath.Join(c.Spec.NodeDir(int(broken)), "binlogd.json")
	if out, err := binlogd("reseed", "-config", cfg, "-source-node", fmt.Sprint(source)); err == nil || !strings.Contains(out, "runs") && !strings.Contains(out, "in use") {
		t.Fatalf("reseed of a running node: %v\n%s", err, out)
	}
	// Stop the node (binlogd, then the MariaDB it supervised) and break its data.
	for _, p := range []string{"binlogd", "mariadbd"} {
		if err := c.Kill(ctx, broken, p); err != nil {
			t.Fatal(err)
		}
	}
	datadir := filepath.Join(c.Spec.NodeDir(int(broken)), "mysql", "data")
	if err := os.WriteFile(filepath.Join(datadir, "ibdata1"), []byte("this is no tablespace"), 0o640); err != nil {
		t.Fatal(err)
	}
	insertRows(t, db, 5, 500) // written while the node is down: it must get them from the log

	if out, err := binlogd("reseed", "-config", cfg, "-source-node", fmt.Sprint(master)); err == nil || !strings.Contains(out, "is the master") {
		t.Fatalf("reseed from the master without -force: %v\n%s", err, out)
	}
	// The source was master for a while and wrote transactions of its own:
	// the copy's position must cover them (gtid_current_pos, not only what
	// it applied as a replica), or the reseeded node would apply them twice.
	switchover(ctx, t, c, master, source)
	sdb := appDB(t, c, source)
	insertRows(t, sdb, 3, 500)
	switchover(ctx, t, c, source, master)
	backupDenied(ctx, t, c, source, mtls.Identity{Role: mtls.RoleProxy, ID: source}, broken)
	backupDenied(ctx, t, c, source, mtls.Identity{Role: mtls.RoleNode, ID: master}, broken) // a node for another node

	start := time.Now()
	out, err := binlogd("reseed", "-config", cfg, "-progress", "100ms") // no source named: the replica among the members
	if err != nil {
		t.Fatalf("reseed: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`reseed: [0-9.]+ [KM]?i?B of ~[0-9.]+ MiB \(\d+%\), [0-9.]+ MiB/s`).MatchString(out) {
		t.Fatalf("no progress line while copying:\n%s", out)
	}
	if !strings.Contains(out, fmt.Sprintf("copying from node %d ", source)) {
		t.Fatalf("reseed did not pick the replica, node %d:\n%s", source, out)
	}
	t.Logf("reseed of node %d from node %d in %.2fs:\n%s", broken, source, time.Since(start).Seconds(), out)
	if !regexp.MustCompile(`reseed: received [0-9.]+ [KMG]iB in .* MiB/s`).MatchString(out) || !strings.Contains(out, "position 0-") {
		t.Fatalf("no final progress line or position in the output:\n%s", out)
	}
	olds, _ := filepath.Glob(datadir + ".old-*")
	if len(olds) != 1 {
		t.Fatalf("old datadir not kept: %v", olds)
	}
	// What mariadb-backup 10.11 wrote: the binlog info carries the
	// source's gtid_current_pos (its own transactions as master included),
	// the slave info its gtid_slave_pos. binlogd sets gtid_slave_pos to
	// gtid_current_pos when a master becomes a replica, so the two are equal
	// here; the slave info is never ahead, and Position prefers the binlog
	// info either way.
	bi, _ := os.ReadFile(filepath.Join(datadir, "xtrabackup_binlog_info"))
	si, _ := os.ReadFile(filepath.Join(datadir, "xtrabackup_slave_info"))
	t.Logf("xtrabackup_binlog_info %q; xtrabackup_slave_info %q", bi, si)
	bpos := strings.Fields(string(bi))
	spos := regexp.MustCompile(`gtid_slave_pos = '([^']*)'`).FindStringSubmatch(string(si))
	if len(bpos) < 3 || spos == nil || seqOf(spos[1]) > seqOf(bpos[2]) || !strings.Contains(out, "position "+bpos[2]+" (from xtrabackup_binlog_info)") {
		t.Fatalf("want the binlog info's position (never behind the slave info's):\n%s", out)
	}
	if err := c.StartNode(broken); err != nil {
		t.Fatal(err)
	}
	insertRows(t, db, 5, 500)
	waitCaughtUp(ctx, t, c, master, broken)
	sameChecksum(ctx, t, c, master, broken)

	// A fourth node, added by reseed from a replica.
	id, err := c.AddNodeByReseed(ctx, source, master)
	if err != nil {
		t.Fatal(err)
	}
	insertRows(t, db, 5, 500)
	waitCaughtUp(ctx, t, c, master, id)
	sameChecksum(ctx, t, c, master, id)
}

// TestReseedVsDumpSeed measures `binlogd reseed` against the dump-based
// `binlogd seed` on the same replica with the same data (PHXGO_RESEED_MB,
// default 200 MB). Slow: it runs only when PHXGO_RESEED_BENCH is set.
func TestReseedVsDumpSeed(t *testing.T) {
	needCluster(t)
	if os.Getenv("PHXGO_RESEED_BENCH") == "" {
		t.Skip("set PHXGO_RESEED_BENCH=1 to measure reseed against a dump")
	}
	mb := 200
	if v, err := strconv.Atoi(os.Getenv("PHXGO_RESEED_MB")); err == nil && v > 0 {
		mb = v
	}
	c, master := localcluster.StartForTest(t, binDir, 3, 5*time.Second, false)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	target := master%3 + 1
	source := target%3 + 1
	db := appDB(t, c, master)
	mustExec(t, db, "CREATE DATABASE app")
	mustExec(t, db, "CREATE TABLE app.t (id INT AUTO_INCREMENT PRIMARY KEY, pad VARCHAR(1000), k INT, KEY (k))")
	start := time.Now()
	insertRows(t, db, mb, 1000) // 1000 rows of ~1 KB a transaction: ~1 MB each
	waitCaughtUp(ctx, t, c, master, target)
	waitCaughtUp(ctx, t, c, master, source)
	t.Logf("loaded ~%d MB in %.1fs", mb, time.Since(start).Seconds())

	nodeDir := c.Spec.NodeDir(int(target))
	cfg := filepath.Join(nodeDir, "binlogd.json")
	stop := func() {
		for _, p := range []string{"binlogd", "mariadbd"} {
			if err := c.Kill(ctx, target, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	stop()
	start = time.Now()
	out, err := binlogd("reseed", "-config", cfg, "-source-node", fmt.Sprint(source), "-discard-old")
	if err != nil {
		t.Fatalf("reseed: %v\n%s", err, out)
	}
	reseedTook := time.Since(start)
	t.Logf("reseed: %.1fs\n%s", reseedTook.Seconds(), lastLines(out, 4))
	if err := c.StartNode(target); err != nil {
		t.Fatal(err)
	}
	waitCaughtUp(ctx, t, c, master, target)
	sameChecksum(ctx, t, c, master, target)

	stop()
	if err := os.RemoveAll(filepath.Join(nodeDir, "mysql", "data")); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	out, err = binlogd("seed", "-config", cfg, "-from-socket", filepath.Join(c.Spec.NodeDir(int(source)), "mysql", "mysqld.sock"))
	if err != nil {
		t.Fatalf("seed: %v\n%s", err, out)
	}
	seedTook := time.Since(start)
	t.Logf("dump seed: %.1fs", seedTook.Seconds())
	if err := c.StartNode(target); err != nil {
		t.Fatal(err)
	}
	waitCaughtUp(ctx, t, c, master, target)
	sameChecksum(ctx, t, c, master, target)
	t.Logf("RESULT ~%d MB: reseed %.1fs, dump seed %.1fs (%.1fx)", mb, reseedTook.Seconds(), seedTook.Seconds(), seedTook.Seconds()/reseedTook.Seconds())
}

func binlogd(args ...string) (string, error) {
	out, err := exec.Command(filepath.Join(binDir, "binlogd"), args...).CombinedOutput()
	return string(out), err
}

func appDB(t *testing.T, c *localcluster.Cluster, id uint32) *sql.DB {
	t.Helper()
	db, err := c.AppDB(c.MySQLAddr(id))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func mustExec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// insertRows commits txns transactions of rows rows of ~1 KB of random
// (incompressible) text each.
func insertRows(t *testing.T, db *sql.DB, txns, rows int) {
	t.Helper()
	for i := 0; i < txns; i++ {
		mustExec(t, db, `INSERT INTO app.t (pad) WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM s WHERE n < ?)
			SELECT CONCAT(REPEAT(MD5(RAND()), 31), n) FROM s`, rows)
	}
}

// waitCaughtUp waits until node id's MariaDB has applied what the
// master's log held when called.
func waitCaughtUp(ctx context.Context, t *testing.T, c *localcluster.Cluster, master, id uint32) {
	t.Helper()
	ms, err := c.Status(ctx, master)
	if err != nil {
		t.Fatal(err)
	}
	want := seqOf(ms.LastValidGtid)
	for {
		st, err := c.Status(ctx, id)
		if err == nil && seqOf(st.MysqlGtidPos) >= want {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("node %d never reached sequence %d: %v %v", id, want, st, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func seqOf(gtid string) int64 {
	parts := strings.Split(gtid, "-")
	n, _ := strconv.ParseInt(parts[len(parts)-1], 10, 64)
	return n
}

func sameChecksum(ctx context.Context, t *testing.T, c *localcluster.Cluster, a, b uint32) {
	t.Helper()
	sum := func(id uint32) (int64, int64) {
		db, err := c.RootDB(id)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var name string
		var cs, n int64
		if err := db.QueryRowContext(ctx, "CHECKSUM TABLE app.t").Scan(&name, &cs); err != nil {
			t.Fatalf("node %d: %v", id, err)
		}
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM app.t").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return cs, n
	}
	ca, na := sum(a)
	cb, nb := sum(b)
	if ca != cb || na != nb {
		t.Fatalf("node %d: checksum %d over %d rows; node %d: %d over %d rows", a, ca, na, b, cb, nb)
	}
	t.Logf("nodes %d and %d: CHECKSUM TABLE %d over %d rows", a, b, ca, na)
}

// backupDenied: identity who's Backup call to node to (for node forID)
// is refused with PermissionDenied.
func backupDenied(ctx context.Context, t *testing.T, c *localcluster.Cluster, to uint32, who mtls.Identity, forID uint32) {
	t.Helper()
	m, err := mtls.Load(c.Spec.TLSFiles(who), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.Status(ctx, to)
	if err != nil {
		t.Fatal(err)
	}
	addr := ""
	for _, mb := range st.Members {
		if mb.Id == to {
			addr = mb.GrpcAddr
		}
	}
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(m.Client(""))))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	s, err := pb.NewAdminClient(cc).Backup(ctx, &pb.BackupRequest{NodeId: forID})
	if err == nil {
		_, err = s.Recv()
	}
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("Backup by %s for node %d: %v, want PermissionDenied", who, forID, err)
	}
	t.Logf("Backup by %s for node %d: %v", who, forID, err)
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// switchover hands the lease from node from to node to and waits until
// the cluster is healthy with to as master.
func switchover(ctx context.Context, t *testing.T, c *localcluster.Cluster, from, to uint32) {
	t.Helper()
	a, err := c.Admin(from)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Switchover(ctx, &pb.SwitchoverRequest{To: to}); err != nil {
		t.Fatalf("switchover %d -> %d: %v", from, to, err)
	}
	for {
		st, err := c.Status(ctx, to)
		if err == nil && st.Role == pb.Role_ROLE_MASTER && st.Ready {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("node %d never became a ready master: %v %v", to, st, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The old master becomes a replica a moment later. A backup taken
	// before it replicates has no slave info (mariadb-backup writes an
	// empty xtrabackup_slave_info), which the caller checks.
	for {
		st, err := c.Status(ctx, from)
		if err == nil && st.Role == pb.Role_ROLE_REPLICA && strings.Contains(st.ReplicationState, "Slave_IO_Running=Yes Slave_SQL_Running=Yes") {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("node %d never replicated from node %d: %v %v", from, to, st, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
