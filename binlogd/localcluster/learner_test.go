package localcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	pb "phxgo/proto"
)

// TestLearnerReadsLagAware: three voters and a learner (node 4), real
// processes. The learner says learner and is never master; the proxies'
// read/write-split port sends reads to its MariaDB like a replica's, from
// its own proxy and from the master's; once its replication stops
// (its binlogd SIGKILLed, its MariaDB left running: Seconds_Behind_Master
// unknown) the master's proxy marks it unhealthy and sends it no read;
// restarted, it serves reads again. A causal proxy (one more sqlproxy of
// node 4's, -mode causal) sends a session's reads after its writes to the
// learner too, and every such read sees the session's write.
func TestLearnerReadsLagAware(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real cluster; skipped in -short")
	}
	bin := t.TempDir()
	if err := BuildBinaries(bin); err != nil {
		t.Fatal(err)
	}
	spec := Spec{BinDir: bin, Nodes: 4, Learners: []int{4}, LeaseDuration: 3 * time.Second, Proxy: true}
	c, master := StartSpecForTest(t, spec)
	if master == 4 {
		t.Fatal("the learner became master")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	st, err := c.Status(ctx, 4)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Learner || st.Role != pb.Role_ROLE_REPLICA {
		t.Fatalf("node 4: learner %v role %s, want a learner replicating", st.Learner, st.Role)
	}

	// readsFrom reads @@server_id (the node id) through addr's
	// rw-split port, each read on a new client session (no held
	// backend), n times, and counts the answers by server.
	readsFrom := func(addr string, n int) map[int]int {
		db, err := c.AppDB(addr)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		db.SetMaxIdleConns(0)
		seen := map[int]int{}
		for range n {
			var sid int
			if err := db.QueryRowContext(ctx, "SELECT @@server_id").Scan(&sid); err != nil {
				t.Fatalf("read via %s: %v", addr, err)
			}
			seen[sid]++
		}
		return seen
	}
	awaitHealthAt := func(what, httpAddr string, healthy bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			h, why := learnerHealth(ctx, httpAddr)
			if h == healthy {
				t.Logf("%s: learner healthy=%v (%s)", what, h, why)
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: learner healthy=%v (%s), want %v", what, h, why, healthy)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	awaitLearnerHealth := func(healthy bool) { t.Helper(); awaitHealthAt("master's proxy", c.ProxyHTTPAddr(master), healthy) }
	awaitLearnerHealth(true)
	causal, causalHTTP := startCausalProxy(t, c, 4)
	// A new proxy checks its backends before it sends them reads.
	awaitHealthAt("causal proxy", causalHTTP, true)
	causalReads(t, ctx, c, causal, 30, true)
	// Each proxy sends the learner reads only once its own check found it
	// caught up: node 4's proxy judges by itself (in CI it had not yet
	// when the master's had, and sent every read to the other replicas).
	awaitHealthAt("node 4's proxy", c.ProxyHTTPAddr(4), true)
	for _, via := range []uint32{4, master} {
		seen := readsFrom(c.RWSplitAddr(via), 60)
		t.Logf("reads via node %d's rw-split port, by server: %v", via, seen)
		if seen[4] == 0 || seen[int(master)] != 0 {
			t.Fatalf("via node %d: reads by server %v: want the learner among the replicas, none on the master", via, seen)
		}
	}

	if err := c.Kill(ctx, 4, "binlogd"); err != nil {
		t.Fatal(err)
	}
	if c.Pid(4, "mariadbd") == 0 {
		t.Fatal("the learner's MariaDB went with its binlogd")
	}
	awaitLearnerHealth(false)
	seen := readsFrom(c.RWSplitAddr(master), 60)
	t.Logf("learner not replicating: reads via the master's proxy by server: %v", seen)
	if seen[4] != 0 {
		t.Fatalf("%d reads went to the learner while its replication was down", seen[4])
	}
	causalReads(t, ctx, c, causal, 20, false)

	if err := c.StartNode(4); err != nil {
		t.Fatal(err)
	}
	awaitLearnerHealth(true)
	if seen := readsFrom(c.RWSplitAddr(master), 60); seen[4] == 0 {
		t.Fatalf("the restarted learner serves no reads: %v", seen)
	}
}

// learnerHealth is node 4's replica health in a proxy's /backends.
func learnerHealth(ctx context.Context, httpAddr string) (bool, string) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+httpAddr+"/backends", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	var b struct {
		Replicas []struct {
			ID      uint32 `json:"id"`
			Healthy bool   `json:"healthy"`
			Error   string `json:"error"`
		} `json:"replicas"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&b); err != nil {
		return false, err.Error()
	}
	for _, r := range b.Replicas {
		if r.ID == 4 {
			return r.Healthy, fmt.Sprintf("error %q", r.Error)
		}
	}
	return false, "node 4 not among the replicas"
}

// startCausalProxy starts one more sqlproxy for node id, in causal mode
// on its own port (the node's unused offsets 7 and 8), and returns its
// client and HTTP addresses; it is stopped when the test ends.
func startCausalProxy(t *testing.T, c *Cluster, id uint32) (listen, httpAddr string) {
	t.Helper()
	listen, httpAddr = c.Spec.addr(int(id), 7), c.Spec.addr(int(id), 8)
	var args []string
	in := c.proxyArgs(id)
	for i := 0; i < len(in); i++ {
		switch in[i] {
		case "-listen":
			args = append(args, "-listen", listen)
			i++
		case "-http":
			args = append(args, "-http", httpAddr)
			i++
		case "-rwsplit-listen":
			i++
		default:
			args = append(args, in[i])
		}
	}
	args = append(args, "-mode", "causal")
	logf, err := os.Create(filepath.Join(c.Spec.NodeDir(int(id)), "sqlproxy-causal.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(c.Spec.BinDir, "sqlproxy"), args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("==== causal proxy ====\n%s", b)
		}
	})
	return listen, httpAddr
}

// causalReads writes a row through the causal proxy and reads it back at
// once, n times, each pair on one client session: every read must see
// its write; wantLearner: some reads were served by node 4's MariaDB,
// else none.
func causalReads(t *testing.T, ctx context.Context, c *Cluster, addr string, n int, wantLearner bool) {
	t.Helper()
	db, err := c.AppDB(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS test_learner")
		if err == nil {
			_, err = db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS test_learner.c (id INT PRIMARY KEY AUTO_INCREMENT, v INT) ENGINE=InnoDB")
		}
		if err == nil {
			break
		}
		if time.Now().After(deadline) { // the new proxy may not know the master yet
			t.Fatalf("causal proxy: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	seen := map[int]int{}
	for i := range n {
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		res, err := conn.ExecContext(ctx, "INSERT INTO test_learner.c (v) VALUES (?)", i)
		if err != nil {
			t.Fatalf("causal write: %v", err)
		}
		row, _ := res.LastInsertId()
		var sid, got int
		if err := conn.QueryRowContext(ctx, "SELECT @@server_id, COUNT(*) FROM test_learner.c WHERE id = ?", row).Scan(&sid, &got); err != nil {
			t.Fatalf("causal read: %v", err)
		}
		conn.Close()
		if got != 1 {
			t.Fatalf("causal read on server %d missed the session's write (row %d)", sid, row)
		}
		seen[sid]++
	}
	t.Logf("causal proxy: reads after writes by server: %v", seen)
	if (seen[4] > 0) != wantLearner {
		t.Fatalf("causal reads on the learner: %d, want some: %v", seen[4], wantLearner)
	}
}
