package e2e

import (
	"context"
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

// startWorkload creates e2e.w through the master and starts four writers
// (stopped at the latest when the test ends), returning once 50 inserts
// are acknowledged.
func startWorkload(t *testing.T, c *localcluster.Cluster, master uint32) *writers {
	t.Helper()
	appDBWith(t, c, master, "CREATE DATABASE e2e", "CREATE TABLE e2e.w (id INT PRIMARY KEY, master INT)").Close()
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

func TestFailoverKillMasterMysqld(t *testing.T) {
	c, master, w := setupWorkload(t)
	fault := time.Now()
	if err := c.Kill(context.Background(), master, "mariadbd"); err != nil {
		t.Fatal(err)
	}
	finish(t, c, w, fault, "kill -9 master mysqld")
}

func TestFailoverKillMasterBinlogd(t *testing.T) {
	// The old node's binlogd comes back while the others elect a master;
	// it must find its mysqld with commits waiting, kill and recover it.
	killMasterAndRestart(t, "kill -9 master binlogd", "binlogd")
}

// killMasterAndRestart kills the master's processes under a write load,
// restarts them once the writers reach the new master, and checks the
// cluster with finish.
func killMasterAndRestart(t *testing.T, fault string, procs ...string) {
	t.Helper()
	c, master, w := setupWorkload(t)
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

func TestFailoverPauseMasterBinlogd(t *testing.T) {
	c, master, w := setupWorkload(t)
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

func TestFailoverKillMasterNode(t *testing.T) {
	killMasterAndRestart(t, "kill -9 master node", "binlogd", "mariadbd")
}

func TestRestartAllNodes(t *testing.T) {
	c, _, w := setupWorkload(t)
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
