package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"phxgo/binlogd/localcluster"
	"phxgo/wal"
)

// TestLogDivergenceReported: a replica's Paxos log holds a value that
// was not chosen (here its disk "corrupts" an applied entry into a
// no-op while it is stopped, as a forged Learn or a bug would leave it):
// Paxos never looks at a chosen entry again, so before digests the
// cluster stayed "healthy". Now, once the range holding the entry is
// finished, `binlogd cluster status` names the replica log_diverged (the
// odd one: the two others agree), exits 1, and the replica logs the
// divergence. (When the entry held a transaction its MariaDB had
// committed, the replica's own recovery also finds that transaction
// missing from its log and marks it unsafe: the acknowledged write the
// fork lost.)
func TestLogDivergenceReported(t *testing.T) {
	c, master := localcluster.StartForTest(t, binDir, 3, 3*time.Second, false)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	db := appDBWith(t, c, master, "CREATE DATABASE app_fork", "CREATE TABLE app_fork.t (k INT PRIMARY KEY)")
	defer db.Close()
	for k := 0; k < 10; k++ {
		mustExec(t, db, "INSERT INTO app_fork.t VALUES (?)", k)
	}
	awaitSameData(t, c, "app_fork.t")
	victim := master%3 + 1

	if err := c.StopNode(ctx, victim); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(c.Spec.NodeDir(int(victim)), "paxos")
	w, err := wal.Open(dir, wal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hs := w.HardState()
	const r = 256 // paxos.DefaultDigestRange
	var forged uint64
	for i := hs.Applied; i >= hs.FirstIndex && i > 0 && i > (hs.Applied-1)/r*r; i-- {
		a, ok, err := w.Get(i)
		if err != nil {
			t.Fatal(err)
		}
		if ok && len(a.Value) > 0 {
			if err := w.Save(wal.Update{Accepted: []wal.Accepted{{Index: i, Ballot: a.Ballot}}}); err != nil {
				t.Fatal(err)
			}
			forged = i
			break
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if forged == 0 {
		t.Skipf("no value to corrupt in the victim's current range (applied %d)", hs.Applied)
	}
	// Its digest file would keep the range's digest if it was finished.
	if err := os.Remove(filepath.Join(dir, "logdigests")); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	first := (forged-1)/r*r + 1
	t.Logf("node %d: index %d (applied %d) made a no-op; range [%d, %d]", victim, forged, hs.Applied, first, first+r-1)
	if err := c.StartNode(victim); err != nil {
		t.Fatal(err)
	}

	cfg := filepath.Join(c.Spec.NodeDir(int(master)), "binlogd.json")
	st, err := c.Status(ctx, master)
	if err != nil {
		t.Fatal(err)
	}
	var addrs []string
	for _, m := range st.Members {
		addrs = append(addrs, m.GrpcAddr)
	}
	status := func() (clusterView, string, int) {
		out, err := exec.CommandContext(ctx, filepath.Join(binDir, "binlogd"), "cluster", "status", "-json",
			"-addr", strings.Join(addrs, ","), "-config", cfg, "-timeout", "2s").Output()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		var v clusterView
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("cluster status -json: %v\n%s", err, out)
		}
		return v, string(out), code
	}
	// Move the log past the range's end: one transaction, one entry or more.
	k := 100
	for {
		v, out, code := status()
		diverged := false
		for _, m := range v.Members {
			if m.ID == victim && m.Health == "log_diverged" {
				diverged = true
			}
		}
		if diverged {
			if code != 1 || v.Healthy {
				t.Fatalf("log diverged, yet exit %d healthy %v:\n%s", code, v.Healthy, out)
			}
			want := fmt.Sprintf("log diverged at indexes [%d, %d]", first, first+r-1)
			found := false
			for _, p := range v.Problems {
				if strings.Contains(p, want) && strings.Contains(p, fmt.Sprintf("the odd node %d", victim)) {
					found = true
				}
			}
			if !found {
				t.Fatalf("problems %q: want %q naming node %d the odd one", v.Problems, want, victim)
			}
			for _, m := range v.Members {
				if m.ID != victim && m.Health == "log_diverged" {
					t.Fatalf("node %d log_diverged too:\n%s", m.ID, out)
				}
			}
			t.Logf("cluster status: %q", v.Problems)
			if vs, err := c.Status(ctx, victim); err == nil {
				t.Logf("node %d: role %v unsafe %q applied %d", victim, vs.Role, vs.UnsafeReason, vs.AppliedIndex)
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("node %d never reported log_diverged:\n%s", victim, out)
		}
		for j := 0; j < 20; j++ {
			mustExec(t, db, "INSERT INTO app_fork.t VALUES (?)", k)
			k++
		}
	}
	awaitLog(ctx, t, c, victim, "LOG DIVERGENCE")
	// Every node hears every member's digests: the victim knows it is the
	// odd one (so it does not ask for the lease), the others that they
	// are not.
	for _, id := range c.IDs() {
		want := map[bool]float64{true: 1, false: 0}[id == victim]
		for scrape(t, c, id)["phxgo_paxos_log_odd"] != want || scrape(t, c, id)["phxgo_paxos_log_diverged"] != 1 {
			if ctx.Err() != nil {
				t.Fatalf("node %d: phxgo_paxos_log_odd %v (want %v), phxgo_paxos_log_diverged %v (want 1)", id,
					scrape(t, c, id)["phxgo_paxos_log_odd"], want, scrape(t, c, id)["phxgo_paxos_log_diverged"])
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// The victim recorded it is the odd one: after a restart it says so
	// from the start, whatever digests the nodes exchange by then.
	if err := c.StopNode(ctx, victim); err != nil {
		t.Fatal(err)
	}
	if err := c.StartNode(victim); err != nil {
		t.Fatal(err)
	}
	for {
		vs, err := c.Status(ctx, victim)
		if err == nil {
			if len(vs.LogOddRanges) != 1 || vs.LogOddRanges[0].First != first {
				t.Fatalf("node %d after a restart: odd ranges %v", victim, vs.LogOddRanges)
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("node %d never answered after its restart: %v", victim, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(nodeLog(t, c, victim), "ODD ONE") {
		t.Fatalf("node %d logged nothing about being the odd one", victim)
	}
}
