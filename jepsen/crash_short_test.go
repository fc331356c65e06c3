package jepsen

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"phxgo/binlogd/localcluster"
	"phxgo/jepsen/checker"
	"phxgo/jepsen/history"
	"phxgo/jepsen/nemesis"
	"phxgo/jepsen/netns"
	"phxgo/jepsen/phxcluster"
)

// Short forms (make test) of the issue-20 nemeses and of the append
// workload on the read/write-split port, each about a minute against a
// real 3-node cluster. The full forms run in make jepsen
// (scripts/jepsen-matrix.sh).

var (
	shortBinOnce sync.Once
	shortBin     string
	shortBinErr  error
)

// TestMain removes the binaries shortCluster built and the solo cases'
// template datadir.
func TestMain(m *testing.M) {
	code := m.Run()
	if shortBin != "" {
		os.RemoveAll(shortBin)
	}
	if soloTemplate.dir != "" {
		os.RemoveAll(soloTemplate.dir)
	}
	os.Exit(code)
}

// shortCluster skips without namespaces, and builds binlogd and sqlproxy
// from this tree once for the tests in this file.
func shortCluster(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a real cluster for about a minute; skipped in -short")
	}
	if err := netns.Supported(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	if _, err := exec.LookPath("mariadb-install-db"); err != nil {
		t.Fatal("MariaDB not installed (scripts/install-deps.sh)")
	}
	shortBinOnce.Do(func() {
		shortBin, shortBinErr = os.MkdirTemp("", "jepsen-short-bin-")
		if shortBinErr == nil {
			shortBinErr = localcluster.BuildBinaries(shortBin)
		}
	})
	if shortBinErr != nil {
		t.Fatal(shortBinErr)
	}
	return shortBin
}

// shortConfig is a 3-node run of cfg's workload for d, lease 3 s.
func shortConfig(t *testing.T, workload, nem string, d time.Duration, seed uint64) Config {
	cfg := DefaultConfig()
	cfg.Workload, cfg.Nemesis, cfg.Nodes = workload, nem, 3
	cfg.Time, cfg.Concurrency, cfg.Rate, cfg.Seed = d, 6, 60, seed
	cfg.Lease, cfg.KeepData = 3*time.Second, true
	cfg.BinDir = shortCluster(t)
	cfg.OutDir = resultsDir(t, "jepsen-short-"+strings.ReplaceAll(nem, ",", "+")+"-", "")
	return cfg
}

// resultsDir is a new directory for a run's results: removed when the
// test passes, kept and its path logged (with what, if any) when it fails.
func resultsDir(t *testing.T, prefix, what string) string {
	t.Helper()
	out, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("results and node logs kept in %s%s", out, what)
			return
		}
		os.RemoveAll(out)
	})
	return out
}

// runShort runs cfg and fails unless it is valid, recovered and has at
// least minOK ok operations; it returns the results and the fault windows.
func runShort(t *testing.T, cfg Config, minOK int) (*Results, []history.Op) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	start := time.Now()
	res, err := Run(ctx, cfg, phxcluster.Launcher(phxcluster.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s (%.0fs)", res.Line(), time.Since(start).Seconds())
	h, err := history.ReadFile(filepath.Join(cfg.OutDir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var faults []history.Op
	for _, op := range h {
		if !op.IsClient() {
			t.Logf("fault %.1fs-%.1fs: %s (%s %s)", float64(op.Invoke)/1e9, float64(op.Complete)/1e9, op.Note, op.Outcome, op.Error)
			faults = append(faults, op)
		}
	}
	for _, c := range res.Checks {
		t.Logf("check %s: %s %v", c.Checker, c.Valid, c.Info)
	}
	if res.NotRecovered != "" {
		t.Fatalf("cluster did not recover after heal: %s", res.NotRecovered)
	}
	if res.Valid != checker.Valid {
		t.Fatalf("%s; checks: %+v", res.Line(), res.Checks)
	}
	if res.OK < minOK {
		t.Fatalf("only %d ok operations", res.OK)
	}
	return res, faults
}

func check(res *Results, name string) checker.Result {
	for _, c := range res.Checks {
		if c.Checker == name {
			return c
		}
	}
	return checker.Result{}
}

// TestJepsenShortKillMajority: append transactions while a majority (2
// of 3), then all 3 nodes are SIGKILLed at once and restarted through
// recovery. Nothing acknowledged may be lost, no cycle may appear.
func TestJepsenShortKillMajority(t *testing.T) {
	cfg := shortConfig(t, "append", nemesis.KillMajority, 22*time.Second, 1)
	cfg.Schedule = &nemesis.Schedule{Quiet: 4 * time.Second, HoldMin: 2 * time.Second, HoldMax: 2 * time.Second,
		HealTO: 2 * time.Minute, RoundRobin: true}
	res, faults := runShort(t, cfg, 50)
	var majority, all int
	for _, f := range faults {
		if f.Outcome != history.OK {
			t.Errorf("fault not injected or healed: %+v", f)
		}
		switch {
		case strings.Contains(f.Note, "majority"):
			majority++
		case strings.Contains(f.Note, " all "):
			all++
		}
	}
	if majority == 0 || all == 0 {
		t.Fatalf("faults: %d majority, %d all; want both", majority, all)
	}
	if n := check(res, "append").Info["graph-edges"]; n == nil || n.(int) == 0 {
		t.Fatalf("no dependency graph built: %v", check(res, "append").Info)
	}
}

// TestJepsenShortLogd: the master's binlogd alone is SIGKILLed while its
// MariaDB keeps running with commits blocked in the semi-sync wait. The
// clients' own timeout (30 s) exceeds the latency bound (10 s) by more
// than a fault's hold, so a COMMIT left hanging once binlogd runs again
// fails the latency check. Clients blocked for the fault's whole hold
// (the COMMIT, and statements waiting for its row locks) make few ops.
func TestJepsenShortLogd(t *testing.T) {
	cfg := shortConfig(t, "append", nemesis.Logd, 20*time.Second, 1)
	cfg.OpTimeout, cfg.LatencyBound = 30*time.Second, 10*time.Second
	// Held 6 s (two leases: another node takes over meanwhile).
	cfg.Schedule = &nemesis.Schedule{Quiet: 4 * time.Second, HoldMin: 6 * time.Second, HoldMax: 6 * time.Second,
		HealTO: 2 * time.Minute, RoundRobin: true}
	res, faults := runShort(t, cfg, 20)
	if len(faults) == 0 || faults[0].Outcome != history.OK {
		t.Fatalf("no logd fault injected: %+v", faults)
	}
	lat := check(res, "latency")
	if lat.Checker == "" {
		t.Fatal("no latency check")
	}
	ws, _ := check(res, "availability").Info["windows"].([]checker.Window)
	for _, w := range ws {
		t.Logf("%s: held %.1fs, longest op open during it %.1fs", w.Fault, w.Heal-w.Start, w.MaxLatencySeconds)
	}
	t.Logf("longest op %vs, longest wait with no fault in place %vs (bound %vs)",
		lat.Info["max-latency-s"], lat.Info["max-wait-s"], lat.Info["bound-s"])
}

// TestJepsenShortAppendRWSplit: the append workload with every client on
// the proxies' read/write-split port under kill -9: read-only ops are
// single SELECTs that replicas serve (stale allowed; garbage, aborted,
// forked or non-snapshot reads not), transactions go to the master.
func TestJepsenShortAppendRWSplit(t *testing.T) {
	cfg := shortConfig(t, "append", nemesis.Kill, 22*time.Second, 2)
	cfg.RWSplit = true
	cfg.Schedule = &nemesis.Schedule{Quiet: 4 * time.Second, HoldMin: 3 * time.Second, HoldMax: 4 * time.Second,
		HealTO: 2 * time.Minute, RoundRobin: true}
	res, _ := runShort(t, cfg, 50)
	info := check(res, "append").Info
	if n, _ := info["replica-reads"].(int); n == 0 {
		t.Fatalf("no read went through the read/write-split port as a replica read: %v", info)
	}
}
