package jepsen

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"phxgo/jepsen/checker"
	"phxgo/jepsen/history"
	"phxgo/jepsen/lazyfs"
	"phxgo/jepsen/nemesis"
	"phxgo/jepsen/phxcluster"
)

// TestJepsenPowerShort is the short form of the power nemesis: a real
// 3-node cluster whose node directories (binlogd's Paxos log, MariaDB's
// datadir) are on jepsen/lazyfs, the register workload for 50 s while
// the power of one node, then a majority, then all nodes is cut (writes
// not fsynced are dropped, every process SIGKILLed) and the nodes come
// back through binlogd's recovery. Valid means every acknowledged write
// survived and nothing unacknowledged came back. Results are kept on
// failure, with the seed.
func TestJepsenPowerShort(t *testing.T) {
	// Opt-in until it has passed at several seeds after lazyfs's last
	// fixes; `make jepsen` runs the power nemesis in full either way.
	if os.Getenv("PHXGO_JEPSEN_POWER") == "" {
		t.Skip("set PHXGO_JEPSEN_POWER=1 to run the power-loss short test (3-4 min)")
	}
	bin := shortCluster(t) // skips in -short or without namespaces; binaries shared with the other short tests
	if err := lazyfs.Supported(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	out, err := os.MkdirTemp("", "jepsen-power-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("results and node logs kept in %s", out)
			return
		}
		os.RemoveAll(out)
	})
	cfg := DefaultConfig()
	cfg.Workload, cfg.Nemesis, cfg.Nodes = "register", nemesis.Power, 3
	cfg.Time, cfg.Concurrency, cfg.Rate, cfg.Seed = 50*time.Second, 8, 100, 1
	cfg.Lease = 3 * time.Second
	cfg.BinDir, cfg.OutDir, cfg.KeepData = bin, out, true
	// Three faults (one node, a majority, all): quiet 5 s, held 3–4 s.
	cfg.Schedule = &nemesis.Schedule{Quiet: 5 * time.Second, HoldMin: 3 * time.Second, HoldMax: 4 * time.Second,
		HealTO: 2 * time.Minute, RoundRobin: true}
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()
	res, err := Run(ctx, cfg, phxcluster.Launcher(phxcluster.Options{LazyFS: true}))
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res.Line())
	h, err := history.ReadFile(filepath.Join(out, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	cuts := map[string]int{}
	for _, op := range h {
		if op.IsClient() {
			continue
		}
		t.Logf("fault: %s (%s %s)", op.Note, op.Outcome, op.Error)
		for _, w := range []string{"power loss master", "power loss node", "power loss majority", "power loss all"} {
			if strings.HasPrefix(op.Note, w) && op.Outcome == history.OK {
				cuts[strings.TrimPrefix(w, "power loss ")]++
			}
		}
	}
	for _, c := range res.Checks {
		t.Logf("check %s: %s %v", c.Checker, c.Valid, c.Info)
	}
	if res.NotRecovered != "" {
		t.Errorf("cluster did not recover after heal: %s", res.NotRecovered)
	}
	if res.Valid != checker.Valid {
		t.Fatalf("seed %d: %s; anomalies: %+v", cfg.Seed, res.Line(), res.Checks)
	}
	if cuts["majority"] == 0 || cuts["all"] == 0 || cuts["master"]+cuts["node"] == 0 {
		t.Fatalf("power faults %v: want one node, a majority and all", cuts)
	}
	if res.OK < 100 {
		t.Fatalf("only %d ok operations", res.OK)
	}
}
