package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"phxgo/binlogd/localcluster"
	pb "phxgo/proto"
)

// TestWitnessFailover: two data nodes and a witness (binlogd only). The
// witness runs no MariaDB and never becomes master; its log is compacted
// once the data nodes applied it; it may crash and catch up; kill -9 of
// the master's binlogd and MariaDB fails over to the other data node (the
// witness's vote makes the majority) with no acknowledged insert lost;
// a graceful stop hands over to a data node, not the witness.
func TestWitnessFailover(t *testing.T) {
	const witness = uint32(3)
	c, master := localcluster.StartSpecForTest(t, localcluster.Spec{
		BinDir: binDir, Nodes: 3, Witnesses: localcluster.WitnessIDs(2, 1), LeaseDuration: failoverLease,
		LogRetention: time.Second,
	})
	if master == witness {
		t.Fatalf("the witness is master")
	}
	if pid := c.Pid(witness, "mariadbd"); pid != 0 {
		t.Fatalf("the witness runs mariadbd (pid %d)", pid)
	}
	if _, err := os.Stat(filepath.Join(c.Spec.NodeDir(int(witness)), "mysql", "data")); !os.IsNotExist(err) {
		t.Fatalf("the witness has a MariaDB datadir (stat: %v)", err)
	}
	st0, err := c.Status(context.Background(), witness)
	if err != nil {
		t.Fatal(err)
	}
	if st0.Role != pb.Role_ROLE_WITNESS || st0.MysqlUp || st0.MasterId != master {
		t.Fatalf("witness status: role %v mysql_up %v master %d (want WITNESS, false, %d)", st0.Role, st0.MysqlUp, st0.MasterId, master)
	}
	stopWatch := watchNeverMaster(t, c, witness)
	defer stopWatch()

	w := startWorkload(t, c, master)

	// Compaction: the witness's first index moves once both data nodes'
	// MariaDBs durably applied what it cuts.
	awaitFirstIndexAbove(t, c, witness, st0.FirstIndex, time.Minute)

	// Switchover to the witness is refused.
	if a, err := c.Admin(master); err == nil {
		if _, err := a.Switchover(context.Background(), &pb.SwitchoverRequest{To: witness}); err == nil {
			t.Fatal("switchover to the witness was accepted")
		} else {
			t.Logf("switchover to the witness refused: %v", err)
		}
	}

	// The witness crashes and comes back: the two data nodes are a
	// majority meanwhile, and the witness catches up from them.
	if err := c.Kill(context.Background(), witness, "binlogd"); err != nil {
		t.Fatal(err)
	}
	w.awaitAcks(t, 20, time.Minute)
	if err := c.StartNode(witness); err != nil {
		t.Fatal(err)
	}
	awaitAppliedIndex(t, c, witness, master, time.Minute)

	fault := time.Now()
	for _, p := range []string{"binlogd", "mariadbd"} {
		if err := c.Kill(context.Background(), master, p); err != nil {
			t.Fatal(err)
		}
	}
	other := 3 - master // the other data node: 1 or 2
	ctx, cancel := context.WithTimeout(context.Background(), 10*failoverLease)
	awaitReadyMaster(ctx, t, c, other)
	cancel()
	t.Logf("node %d ready master %.2fs after kill -9 of node %d (lease %v)", other, time.Since(fault).Seconds(), master, failoverLease)
	w.awaitAcks(t, 20, 2*time.Minute)

	// The old master comes back as a replica and catches up.
	if err := c.StartNode(master); err != nil {
		t.Fatal(err)
	}
	w.stop()
	hctx, hcancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer hcancel()
	if _, err := c.WaitHealthy(hctx, func(s string) { t.Log("waiting:", s) }); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", w)
	w.checkAckedOn(t, master, other)

	// A graceful stop of the master hands over to the other data node,
	// never to the witness.
	sctx, scancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer scancel()
	if err := c.StopNode(sctx, other); err != nil {
		t.Fatal(err)
	}
	awaitReadyMaster(sctx, t, c, master)
	t.Logf("graceful stop of master %d handed over to node %d", other, master)
}

// awaitAppliedIndex waits until node id has applied what node of had
// applied when the wait began.
func awaitAppliedIndex(t *testing.T, c *localcluster.Cluster, id, of uint32, within time.Duration) {
	t.Helper()
	ref, err := c.Status(context.Background(), of)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(within)
	for {
		st, err := c.Status(context.Background(), id)
		if err == nil && st.AppliedIndex >= ref.AppliedIndex {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %d did not reach applied index %d within %v: %v %v", id, ref.AppliedIndex, within, st, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// watchNeverMaster polls every node's status until stopped and fails the
// test if any names the witness master or the witness reports another
// role.
func watchNeverMaster(t *testing.T, c *localcluster.Cluster, witness uint32) (stop func()) {
	return watch(func(ctx context.Context) {
		for _, id := range c.IDs() {
			st, err := c.Status(ctx, id)
			if err != nil {
				continue
			}
			if st.MasterId == witness {
				t.Errorf("node %d sees the witness (node %d) as master", id, witness)
			}
			if id == witness && st.Role != pb.Role_ROLE_WITNESS {
				t.Errorf("the witness reports role %v", st.Role)
			}
		}
	})
}

func awaitFirstIndexAbove(t *testing.T, c *localcluster.Cluster, id uint32, first uint64, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		st, err := c.Status(context.Background(), id)
		if err == nil && st.FirstIndex > first {
			t.Logf("node %d compacted: first index %d -> %d (applied %d, %d bytes)", id, first, st.FirstIndex, st.AppliedIndex, st.LogBytes)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %d's log was not compacted within %v: first index %d (status %v, err %v)", id, within, first, st, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
