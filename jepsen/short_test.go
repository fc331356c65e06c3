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
	"phxgo/jepsen/nemesis"
	"phxgo/jepsen/phxcluster"
	"phxgo/jepsen/report"
)

// TestJepsenShort is the CI run of the issue: a real 3-node phxgo cluster
// (binlogd + mariadbd + sqlproxy per node, built from this tree) in a
// namespace, the register workload for 45 s under kill -9 and partition
// faults taken in turn, then heal, recovery and the linearizability
// check. It must be valid. On failure the results and the cluster's data
// are kept and their paths logged.
func TestJepsenShort(t *testing.T) {
	bin := shortCluster(t) // skips in -short or without namespaces; one build for every short run
	out := resultsDir(t, "jepsen-short-", " (logs/n*-binlogd.log, logs/n*-paxos-rejected.txt)")

	cfg := DefaultConfig()
	cfg.Workload, cfg.Nemesis, cfg.Nodes = "register", "kill,partition", 3
	cfg.Time, cfg.Concurrency, cfg.Rate, cfg.Seed = 45*time.Second, 8, 100, 1
	cfg.Lease = 3 * time.Second
	cfg.BinDir, cfg.OutDir, cfg.KeepData = bin, out, true
	// Four faults: quiet 4 s, held 4–6 s (a kill's heal restarts the node).
	cfg.Schedule = &nemesis.Schedule{Quiet: 4 * time.Second, HoldMin: 4 * time.Second, HoldMax: 6 * time.Second,
		HealTO: 2 * time.Minute, RoundRobin: true}

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	res, err := Run(ctx, cfg, phxcluster.Launcher(phxcluster.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res.Line())
	for _, f := range []string{report.LatencyPNG, report.ThroughputPNG, report.IndexHTML} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("report file %s missing or empty: %v", f, err)
		}
	}
	h, err := history.ReadFile(filepath.Join(out, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, op := range h {
		if op.IsClient() {
			continue
		}
		t.Logf("fault: %s (%s%s)", op.Note, op.Outcome, op.Error)
		switch {
		case strings.HasPrefix(op.Note, "kill"):
			kinds[nemesis.Kill]++
		case strings.HasPrefix(op.Note, "partition"):
			kinds[nemesis.Partition]++
		}
	}
	for _, c := range res.Checks {
		t.Logf("check %s: %s %v", c.Checker, c.Valid, c.Info)
	}
	if res.NotRecovered != "" {
		t.Errorf("cluster did not recover after heal: %s", res.NotRecovered)
	} else {
		t.Logf("recovered %.1fs after the final heal", res.RecoverySeconds)
	}
	if res.Valid != checker.Valid {
		t.Fatalf("%s; anomalies: %+v", res.Line(), res.Checks)
	}
	if kinds[nemesis.Kill] == 0 || kinds[nemesis.Partition] == 0 {
		t.Fatalf("faults %v: want both kill and partition", kinds)
	}
	if res.OK < 100 {
		t.Fatalf("only %d ok operations", res.OK)
	}
}
