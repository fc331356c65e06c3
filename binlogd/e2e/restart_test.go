package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"phxgo/binlogd/events"
	"phxgo/binlogd/localcluster"
	pb "phxgo/proto"
)

// restartCluster starts 3 nodes whose binlogds run with -keep-mysql (as
// under the systemd unit) and an event hook that appends every event's
// JSON to <dir>/events-<node>.jsonl, and the writers' table.
func restartCluster(t *testing.T) (*localcluster.Cluster, uint32, *writers, string) {
	t.Helper()
	hookDir := t.TempDir()
	hook := filepath.Join(hookDir, "events-{node}.jsonl")
	c, master := localcluster.StartSpecForTest(t, localcluster.Spec{BinDir: binDir, Nodes: 3, LeaseDuration: failoverLease,
		KeepMySQL: true, EventHook: []string{"sh", "-c", "cat >> " + hook + " && echo >> " + hook}})
	return c, master, startWorkload(t, c, master), hookDir
}

// stopBinlogd SIGTERMs node id's binlogd and waits until it has exited.
func stopBinlogd(t *testing.T, ctx context.Context, c *localcluster.Cluster, id uint32) {
	t.Helper()
	pid := c.Pid(id, "binlogd")
	if err := c.Signal(id, "binlogd", syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for c.Pid(id, "binlogd") == pid && pid != 0 {
		if ctx.Err() != nil {
			t.Fatalf("node %d's binlogd did not exit after SIGTERM", id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A binlogd restart on a replica leaves its MariaDB running: the same
// mariadbd is adopted by the next binlogd, and the rows written while
// no binlogd ran on that node arrive there once it serves again. Only a
// graceful stop hands it off: after a kill -9 of binlogd the next binlogd
// kills the leftover and recovers it; a left MariaDB that took a write
// the log does not hold is refused, stopped, and the node goes UNSAFE.
func TestRestartReplicaKeepsMariaDB(t *testing.T) {
	c, master, w, _ := restartCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := master%3 + 1
	mpid := c.Pid(r, "mariadbd")
	stopBinlogd(t, ctx, c, r)
	if c.Pid(r, "mariadbd") != mpid {
		t.Fatalf("node %d's mariadbd (pid %d) stopped with its binlogd", r, mpid)
	}
	w.awaitAcks(t, 30, time.Minute) // written while node r has no binlogd
	if err := c.StartNode(r); err != nil {
		t.Fatal(err)
	}
	awaitCaughtUp(t, ctx, c, r)
	if got := c.Pid(r, "mariadbd"); got != mpid {
		t.Fatalf("node %d's mariadbd is pid %d after the restart, was %d: not adopted", r, got, mpid)
	}

	// kill -9: no handoff; the leftover is killed and recovered.
	if err := c.Kill(ctx, r, "binlogd"); err != nil {
		t.Fatal(err)
	}
	if err := c.StartNode(r); err != nil {
		t.Fatal(err)
	}
	awaitCaughtUp(t, ctx, c, r)
	if got := c.Pid(r, "mariadbd"); got == mpid || got == 0 {
		t.Fatalf("node %d's mariadbd is pid %d after a binlogd kill -9, was %d: a crash's leftover was adopted", r, got, mpid)
	}

	finish(t, c, w, time.Now(), "replica binlogd restarts")
	if st, err := c.Status(ctx, r); err != nil || st.Role != pb.Role_ROLE_REPLICA {
		t.Fatalf("node %d after the restarts: %v %v", r, st, err)
	}

	// A write slipped into the left MariaDB while binlogd was down (the
	// OS admin bypasses read_only): committed in InnoDB, where no binlog
	// cut undoes it. The next binlogd refuses to adopt or rejoin it.
	mpid = c.Pid(r, "mariadbd")
	stopBinlogd(t, ctx, c, r)
	root, err := c.RootDB(r)
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, root, "INSERT INTO e2e.w VALUES (?, 0)", tamperedID)
	root.Close()
	if err := c.StartNode(r); err != nil {
		t.Fatal(err)
	}
	for {
		st, err := c.Status(ctx, r)
		if err == nil && st.Role == pb.Role_ROLE_UNSAFE {
			if !strings.Contains(st.UnsafeReason, "reseed") {
				t.Fatalf("node %d UNSAFE without saying reseed: %s", r, st.UnsafeReason)
			}
			break
		}
		if err == nil && st.Role == pb.Role_ROLE_REPLICA && strings.Contains(st.ReplicationState, "Slave_SQL_Running=Yes") {
			t.Fatalf("node %d rejoined with a write the log does not hold: %v", r, st)
		}
		if ctx.Err() != nil {
			t.Fatalf("node %d: %v %v", r, st, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if mysqldAlive := c.Pid(r, "mariadbd"); mysqldAlive != 0 {
		t.Fatalf("node %d's diverged mariadbd (pid %d, was %d) still runs", r, mysqldAlive, mpid)
	}
}

// tamperedID is a row only a local admin write puts on a replica.
const tamperedID = 1 << 30

// awaitCaughtUp waits until node id's binlogd serves and its MariaDB
// replicates with both threads running.
func awaitCaughtUp(t *testing.T, ctx context.Context, c *localcluster.Cluster, id uint32) {
	t.Helper()
	for {
		st, err := c.Status(ctx, id)
		if err == nil && st.Role == pb.Role_ROLE_REPLICA && strings.Contains(st.ReplicationState, "Slave_IO_Running=Yes Slave_SQL_Running=Yes") {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("node %d does not replicate: %v %v", id, st, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// SIGTERM to the master's binlogd hands over (a switchover, not a
// failover) to another node, which serves within two leases; the old
// master's MariaDB keeps running, read-only, and rejoins as a replica
// when its binlogd starts again; no acknowledged write is lost. The event
// hook saw it all.
func TestStopMasterHandsOver(t *testing.T) {
	c, master, w, hookDir := restartCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	mpid := c.Pid(master, "mariadbd")
	fault := time.Now()
	stopBinlogd(t, ctx, c, master)
	stopped := time.Since(fault)

	// Another node is a ready master within two leases of the SIGTERM.
	var next uint32
	for next == 0 {
		for _, id := range c.IDs() {
			if id == master {
				continue
			}
			if st, err := c.Status(ctx, id); err == nil && st.Role == pb.Role_ROLE_MASTER && st.Ready {
				next = id
			}
		}
		if next == 0 && time.Since(fault) > 2*failoverLease+stopped {
			t.Fatalf("no other ready master %v after the old master's binlogd exited", time.Since(fault)-stopped)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("SIGTERM to master %d: binlogd exited after %.2fs, node %d a ready master after %.2fs", master, stopped.Seconds(), next, time.Since(fault).Seconds())
	if c.Pid(master, "mariadbd") != mpid {
		t.Fatalf("old master %d's mariadbd (pid %d) stopped with its binlogd", master, mpid)
	}
	root, err := c.RootDB(master)
	if err != nil {
		t.Fatal(err)
	}
	var ro int
	if err := root.QueryRowContext(ctx, "SELECT @@GLOBAL.read_only").Scan(&ro); err != nil || ro != 1 {
		t.Fatalf("old master's MariaDB left with read_only=%d (%v)", ro, err)
	}
	root.Close()

	// The hook ran on the new master: became_master, caused by a switchover.
	ev := awaitHookEvent(t, ctx, hookDir, next, func(e events.Event) bool { return e.Kind == events.BecameMaster && e.Node == next })
	if ev.Details["cause"] != "switchover" {
		t.Fatalf("node %d became master by %q, want switchover: %+v", next, ev.Details["cause"], ev)
	}
	for _, id := range c.IDs() {
		for _, e := range hookEvents(t, hookDir, id) {
			if e.Kind == events.Failover {
				t.Fatalf("a failover event on node %d: %+v", id, e)
			}
		}
	}

	w.awaitAcks(t, 30, time.Minute)
	if err := c.StartNode(master); err != nil {
		t.Fatal(err)
	}
	finish(t, c, w, fault, "master binlogd SIGTERM")
	if got := c.Pid(master, "mariadbd"); got != mpid {
		t.Fatalf("old master's mariadbd is pid %d after the restart, was %d: not adopted", got, mpid)
	}
	if st, err := c.Status(ctx, master); err != nil || st.Role != pb.Role_ROLE_REPLICA {
		t.Fatalf("old master %d after the restart: %v %v", master, st, err)
	}
}

// hookEvents reads the events node id's hook wrote so far.
func hookEvents(t *testing.T, dir string, id uint32) []events.Event {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "events-"+itoa(id)+".jsonl"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []events.Event
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var e events.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			continue // a line still being written
		}
		out = append(out, e)
	}
	return out
}

func awaitHookEvent(t *testing.T, ctx context.Context, dir string, id uint32, match func(events.Event) bool) events.Event {
	t.Helper()
	for {
		for _, e := range hookEvents(t, dir, id) {
			if match(e) {
				return e
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("node %d's hook wrote no matching event: %+v", id, hookEvents(t, dir, id))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// SIGTERM to a master that cannot hand over (both replicas' binlogds
// paused: no quorum, no eligible replica) falls back to the old stop:
// binlogd exits within bounded time and stops its MariaDB (safely: killed
// if commits wait) instead of leaving it for adoption; once the replicas
// resume and it starts again, recovery cuts what the log does not hold
// and no acknowledged write is lost.
func TestStopMasterWithoutQuorumFallsBack(t *testing.T) {
	c, master, w, _ := restartCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var paused []uint32
	for _, id := range c.IDs() {
		if id != master {
			if err := c.Signal(id, "binlogd", syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			paused = append(paused, id)
		}
	}
	resume := func() {
		for _, id := range paused {
			_ = c.Signal(id, "binlogd", syscall.SIGCONT)
		}
	}
	defer resume()
	fault := time.Now()
	stopBinlogd(t, ctx, c, master)
	t.Logf("master %d's binlogd exited %.2fs after SIGTERM without a quorum", master, time.Since(fault).Seconds())
	if pid := c.Pid(master, "mariadbd"); pid != 0 {
		t.Fatalf("master %d's mariadbd (pid %d) left running without a handover", master, pid)
	}
	if _, err := os.Stat(filepath.Join(c.Spec.NodeDir(int(master)), "mysqld-handoff.json")); !os.IsNotExist(err) {
		t.Fatalf("a handoff record was written without a handover: %v", err)
	}
	resume()
	if err := c.StartNode(master); err != nil {
		t.Fatal(err)
	}
	finish(t, c, w, fault, "master binlogd SIGTERM without quorum")
}
