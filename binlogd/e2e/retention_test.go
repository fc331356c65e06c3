package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/localcluster"
	pb "phxgo/proto"
)

const retentionLease = 3 * time.Second

func startRetentionCluster(t *testing.T, retain time.Duration, bytes int64) (*localcluster.Cluster, uint32) {
	c, master := localcluster.StartSpecForTest(t, localcluster.Spec{
		BinDir: binDir, Nodes: 3, LeaseDuration: retentionLease,
		LogRetention: retain, LogRetentionBytes: bytes,
	})
	db := appDBWith(t, c, master, "CREATE DATABASE e2e", "CREATE TABLE e2e.w (id INT PRIMARY KEY, master INT)")
	defer db.Close()
	return c, master
}

func statuses(t *testing.T, c *localcluster.Cluster, ids ...uint32) map[uint32]*pb.NodeStatus {
	t.Helper()
	out := map[uint32]*pb.NodeStatus{}
	for _, id := range ids {
		st, err := c.Status(context.Background(), id)
		if err != nil {
			t.Fatalf("status of node %d: %v", id, err)
		}
		out[id] = st
	}
	return out
}

// awaitCompactions waits until every node's first index advanced n times.
func awaitCompactions(t *testing.T, c *localcluster.Cluster, n int) {
	t.Helper()
	advances := map[uint32]int{}
	firsts := map[uint32]uint64{}
	deadline := time.Now().Add(40 * time.Second)
	for {
		done := true
		for id := uint32(1); id <= 3; id++ {
			st, err := c.Status(context.Background(), id)
			if err != nil {
				done = false
				continue
			}
			if f, ok := firsts[id]; ok && st.FirstIndex > f {
				advances[id]++
			}
			firsts[id] = st.FirstIndex
			if advances[id] < n {
				done = false
			}
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("first index advanced %v times (want %d each) within 40s; now at %v", advances, n, firsts)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestRetentionBoundedLog: with a 1s retention and all members up, every
// node's log keeps compacting under a steady insert load (its first index
// advances and the stored part stays a small tail), and the three
// MariaDBs end identical with every acknowledged insert.
//
// Midway a replica is killed (binlogd and MariaDB, -9) and restarted: its
// recovery and its replication start from its own compacted log.
func TestRetentionBoundedLog(t *testing.T) {
	c, master := startRetentionCluster(t, time.Second, 0)
	w := startWriters(t, c, 4)
	defer w.stop()
	w.awaitAcks(t, 20, time.Minute)

	start := statuses(t, c, 1, 2, 3)
	awaitCompactions(t, c, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	victim := master%3 + 1
	for _, p := range []string{"binlogd", "mariadbd"} {
		if err := c.Kill(ctx, victim, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.StartNode(victim); err != nil {
		t.Fatal(err)
	}
	w.awaitAcks(t, 50, time.Minute)
	// The restarted node compacts again: from points it sees from now on.
	awaitCompactions(t, c, 3)
	w.stop()
	if _, err := c.WaitHealthy(ctx, func(s string) { t.Log("waiting:", s) }); err != nil {
		t.Fatal(err)
	}
	awaitSameData(t, c, "e2e.w")
	w.checkAcked(t)
	for id, st := range statuses(t, c, 1, 2, 3) {
		kept := st.AppliedIndex - st.FirstIndex + 1
		t.Logf("node %d: first index %d (GTID %s), applied %d, kept %d entries, %d bytes on disk, %s",
			id, st.FirstIndex, st.FirstGtid, st.AppliedIndex, kept, st.LogBytes, w)
		if st.FirstIndex <= start[id].FirstIndex || kept*2 > st.AppliedIndex {
			t.Errorf("node %d: log not bounded: first index %d (was %d), applied %d", id, st.FirstIndex, start[id].FirstIndex, st.AppliedIndex)
		}
		if st.ReseedNeeded {
			t.Errorf("node %d says reseed, but every member was up", id)
		}
	}
}

// TestRetentionReseed: a replica is stopped; over log_retention_bytes the
// others compact past what its MariaDB applied. At restart its binlogd
// installs a peer's snapshot, its MariaDB gets error 1236 and stays where
// it was (no wrong data), and `binlogd status` says to reseed it.
func TestRetentionReseed(t *testing.T) {
	c, master := startRetentionCluster(t, time.Second, 64<<10)
	w := startWriters(t, c, 4)
	defer w.stop()
	w.awaitAcks(t, 50, time.Minute)
	victim := uint32(1)
	if victim == master {
		victim = 2
	}
	var others []uint32
	for id := uint32(1); id <= 3; id++ {
		if id != victim {
			others = append(others, id)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	before, err := c.Status(ctx, victim)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"binlogd", "mariadbd"} {
		if err := c.Kill(ctx, victim, p); err != nil {
			t.Fatal(err)
		}
	}
	// Its MariaDB had at most what its binlogd saw last (polled every 100ms;
	// the writers keep going, so the log soon passes it by far).
	stopped, err := binlog.ParseGTID(before.MysqlGtidPos)
	if err != nil {
		t.Fatal(err)
	}
	w.awaitAcks(t, 100, time.Minute)
	lastLog := time.Now()
	deadline := time.Now().Add(40 * time.Second)
	for {
		past := true
		for _, st := range statuses(t, c, others...) {
			if st.FirstGtid == "" {
				past = false
				continue
			}
			g, err := binlog.ParseGTID(st.FirstGtid)
			if err != nil {
				t.Fatal(err)
			}
			if g.Seq <= stopped.Seq+20 {
				past = false
			}
		}
		if past {
			break
		}
		if time.Since(lastLog) > 2*time.Second {
			lastLog = time.Now()
			for id, st := range statuses(t, c, others...) {
				t.Logf("node %d: first index %d GTID %q, %d bytes; victim stopped at %s", id, st.FirstIndex, st.FirstGtid, st.LogBytes, stopped)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the others never compacted far: %v", statuses(t, c, others...))
		}
		time.Sleep(200 * time.Millisecond)
	}
	w.stop()
	if err := c.StartNode(victim); err != nil {
		t.Fatal(err)
	}
	var st *pb.NodeStatus
	deadline = time.Now().Add(40 * time.Second)
	for {
		s, err := c.Status(ctx, victim)
		if err == nil && s.ReseedNeeded && strings.Contains(s.ReplicationState, "1236") {
			st = s
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %d never said reseed with error 1236: %v (err %v)", victim, s, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("node %d: %s; MariaDB at %s, log starts at index %d GTID %s", victim, st.ReplicationState, st.MysqlGtidPos, st.FirstIndex, st.FirstGtid)
	out, err := exec.Command(filepath.Join(binDir, "binlogd"), "status", "-addr", st.Members[victim-1].GrpcAddr, "-tls-dir", c.Spec.TLSPath()).CombinedOutput()
	if err != nil {
		t.Fatalf("binlogd status: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "reseed this node") {
		t.Fatalf("binlogd status does not say to reseed:\n%s", out)
	}
	// Its MariaDB did not move past what it had: its rows are a subset of
	// the others', and its GTID is before the log's first.
	db := rootDB(t, c, victim)
	defer db.Close()
	g, err := gtidPos(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := binlog.ParseGTID(st.FirstGtid)
	if g.Seq >= first.Seq {
		t.Fatalf("victim MariaDB at %s, not before the log's first GTID %s", g, first)
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM e2e.w").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n >= w.count() {
		t.Fatalf("victim holds %d rows, the cluster acknowledged %d: it should have stopped short", n, w.count())
	}
	// The others stay healthy and identical.
	for _, id := range others {
		if s, err := c.Status(ctx, id); err != nil || s.ReseedNeeded || s.Role == pb.Role_ROLE_UNSAFE {
			t.Fatalf("node %d: %v %v", id, s, err)
		}
	}
	db.Close()
	reseed(t, ctx, c, victim, others)
	if _, err := c.WaitHealthy(ctx, func(s string) { t.Log("waiting:", s) }); err != nil {
		t.Fatal(err)
	}
	awaitSameData(t, c, "e2e.w")
	w.checkAcked(t)
	if s, err := c.Status(ctx, victim); err != nil || s.ReseedNeeded {
		t.Fatalf("node %d after the reseed: %v %v", victim, s, err)
	}
}

// reseed follows README "Log retention": stop the node, stop a caught-up
// replica's MariaDB (SIGTERM to its binlogd stops it safely), copy that
// datadir over the node's, start both.
func reseed(t *testing.T, ctx context.Context, c *localcluster.Cluster, victim uint32, others []uint32) {
	t.Helper()
	for _, p := range []string{"binlogd", "mariadbd"} {
		if err := c.Kill(ctx, victim, p); err != nil {
			t.Fatal(err)
		}
	}
	var donor uint32
	for donor == 0 {
		for _, id := range others {
			st, err := c.Status(ctx, id)
			if err == nil && st.Role == pb.Role_ROLE_REPLICA && st.MysqlGtidPos == st.LastValidGtid && st.LastValidGtid != "" {
				donor = id
			}
		}
		if ctx.Err() != nil {
			t.Fatal("no caught-up replica to copy")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := c.Signal(donor, "binlogd", syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for c.Pid(donor, "binlogd") != 0 || c.Pid(donor, "mariadbd") != 0 {
		if ctx.Err() != nil {
			t.Fatalf("node %d did not stop", donor)
		}
		time.Sleep(50 * time.Millisecond)
	}
	src := filepath.Join(c.Spec.NodeDir(int(donor)), "mysql", "data")
	dst := filepath.Join(c.Spec.NodeDir(int(victim)), "mysql", "data")
	if err := os.RemoveAll(dst); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("copy %s: %v\n%s", src, err, out)
	}
	t.Logf("reseeded node %d from node %d's datadir", victim, donor)
	for _, id := range []uint32{donor, victim} {
		if err := c.StartNode(id); err != nil {
			t.Fatal(err)
		}
	}
}
