package e2e

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"phxgo/binlogd/localcluster"
)

const failoverLease = 3 * time.Second

func setupWorkload(t *testing.T) (*localcluster.Cluster, uint32, *writers) {
	c, master := localcluster.StartForTest(t, binDir, 3, failoverLease, false)
	return c, master, startWorkload(t, c, master)
}

// startWorkload creates e2e.w through the master (anew: TestFailover's
// cluster has one from the scenario before) and starts four writers
// (stopped at the latest when the test ends), returning once 50 inserts
// are acknowledged.
func startWorkload(t *testing.T, c *localcluster.Cluster, master uint32) *writers {
	t.Helper()
	appDBWith(t, c, master, "DROP DATABASE IF EXISTS e2e", "CREATE DATABASE e2e", "CREATE TABLE e2e.w (id INT PRIMARY KEY, master INT)").Close()
	w := startWriters(t, c, 4)
	t.Cleanup(w.stop)
	w.awaitAcks(t, 50, time.Minute)
	return w
}

// finish waits for a healthy cluster with a master other than old (when
// old is not 0), lets writes flow, stops the writers, and checks that every
// acknowledged insert is on every node and all nodes are identical.
func finish(t *testing.T, c *localcluster.Cluster, w *writers, fault time.Time, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	w.awaitAcks(t, 50, 2*time.Minute)
	last, first := w.gap(fault)
	if !last.IsZero() && !first.IsZero() {
		t.Logf("%s: failover time %.2fs (last ack before the fault to first after; lease %v)", what, first.Sub(last).Seconds(), failoverLease)
	}
	// Stop writing first: under a steady load replicas trail the master by
	// a few transactions, and "healthy" means caught up.
	w.stop()
	if _, err := c.WaitHealthy(ctx, func(s string) { t.Log("waiting:", s) }); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %s", what, w)
	awaitSameData(t, c, "e2e.w")
	w.checkAcked(t)
}

// TestFailover runs the fault scenarios that need only a healthy 3-node
// cluster (lease failoverLease) one after another on one cluster, each
// under its own write load (e2e.w created anew) unless it says otherwise.
// Each ends with the cluster healthy and its nodes identical (finish
// checks both), so the next starts from a cluster that has been through
// faults, as a production one has; a cluster apiece cost make test about
// 10 s and 12 CPU-seconds each. A scenario that fails stops the cluster
// (its logs dumped) and the next one starts a new cluster.
func TestFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real cluster; skipped in -short")
	}
	base := t.TempDir() // removed after the cleanup below has stopped the cluster
	var shared *localcluster.Cluster
	t.Cleanup(func() {
		if shared != nil {
			_ = shared.Stop()
		}
	})
	for _, sc := range []struct {
		name     string
		workload bool
		run      func(t *testing.T, c *localcluster.Cluster, master uint32, w *writers)
	}{
		{"KillMasterMysqld", true, failoverKillMasterMysqld},
		{"KillMasterBinlogd", true, failoverKillMasterBinlogd},
		{"PauseMasterBinlogd", true, failoverPauseMasterBinlogd},
		{"KillMasterNode", true, failoverKillMasterNode},
		{"RestartAllNodes", true, restartAllNodes},
		{"Switchover", true, switchover},
		{"SwitchoverEvents", false, func(t *testing.T, c *localcluster.Cluster, master uint32, _ *writers) {
			switchoverEvents(t, c, master)
		}},
		{"RelaxedReplicasPromoteDurable", true, relaxedReplicasPromoteDurable},
		{"StepDownRaceNoAckedLoss", true, stepDownRaceNoAckedLoss},
	} {
		t.Run(sc.name, func(t *testing.T) {
			if shared == nil {
				shared = startSharedCluster(t, base)
			}
			c := shared
			t.Cleanup(func() { // after the writers stop (registered later, run first)
				if t.Failed() {
					c.DumpLogs(t)
					_ = c.Stop()
					shared = nil
				}
			})
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			master, err := c.WaitHealthy(ctx, func(s string) { t.Log("waiting:", s) })
			if err != nil {
				t.Fatal(err)
			}
			var w *writers
			if sc.workload {
				w = startWorkload(t, c, master)
			}
			sc.run(t, c, master, w)
		})
	}
}

// startSharedCluster starts TestFailover's cluster in a new directory
// under base, stopped by TestFailover (not by t: the subtest that
// happens to start it).
func startSharedCluster(t *testing.T, base string) *localcluster.Cluster {
	t.Helper()
	dir, err := os.MkdirTemp(base, "cluster-")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Spec{BinDir: binDir, Nodes: 3, LeaseDuration: failoverLease,
		Dir: dir, BasePort: localcluster.FreeBasePort(4)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func failoverKillMasterMysqld(t *testing.T, c *localcluster.Cluster, master uint32, w *writers) {
	fault := time.Now()
	if err := c.Kill(context.Background(), master, "mariadbd"); err != nil {
		t.Fatal(err)
	}
	finish(t, c, w, fault, "kill -9 master mysqld")
}

func failoverKillMasterBinlogd(t *testing.T, c *localcluster.Cluster, master uint32, w *writers) {
	// The old node's binlogd comes back while the others elect a master;
	// it must find its mysqld with commits waiting, kill and recover it.
	killMasterAndRestart(t, c, master, w, "kill -9 master binlogd", "binlogd")
}

// killMasterAndRestart kills the master's processes under a write load,
// restarts them once the writers reach the new master, and checks the
// cluster with finish.
func killMasterAndRestart(t *testing.T, c *localcluster.Cluster, master uint32, w *writers, fault string, procs ...string) {
	t.Helper()
	at := time.Now()
	for _, p := range procs {
		if err := c.Kill(context.Background(), master, p); err != nil {
			t.Fatal(err)
		}
	}
	w.awaitAcks(t, 20, 2*time.Minute)
	if err := c.StartNode(master); err != nil {
		t.Fatal(err)
	}
	finish(t, c, w, at, fault)
}

func failoverPauseMasterBinlogd(t *testing.T, c *localcluster.Cluster, master uint32, w *writers) {
	fault := time.Now()
	if err := c.Signal(master, "binlogd", syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// Host A hangs and B takes the lock. When A wakes up, its term is
	// over: its batches are rejected, it is fenced, and it rejoins as a
	// replica through recovery.
	w.awaitAcks(t, 20, 2*time.Minute)
	for time.Since(fault) < 3*failoverLease {
		time.Sleep(50 * time.Millisecond)
	}
	if err := c.Signal(master, "binlogd", syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	finish(t, c, w, fault, "SIGSTOP master binlogd")
}

func failoverKillMasterNode(t *testing.T, c *localcluster.Cluster, master uint32, w *writers) {
	killMasterAndRestart(t, c, master, w, "kill -9 master node", "binlogd", "mariadbd")
}

func restartAllNodes(t *testing.T, c *localcluster.Cluster, _ uint32, w *writers) {
	fault := time.Now()
	for id := uint32(1); id <= 3; id++ {
		for _, p := range []string{"binlogd", "mariadbd"} {
			if err := c.Kill(context.Background(), id, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	for id := uint32(1); id <= 3; id++ {
		if err := c.StartNode(id); err != nil {
			t.Fatal(err)
		}
	}
	finish(t, c, w, fault, "kill -9 and restart every node")
}
