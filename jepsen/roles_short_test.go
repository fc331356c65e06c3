package jepsen

import (
	"strings"
	"testing"
	"time"

	"phxgo/jepsen/history"
	"phxgo/jepsen/nemesis"
)

// Short forms (make test) of the Jepsen workloads with a witness and with
// a learner in the cluster (issue 21). The full forms are make jepsen's
// witness and learner cells (scripts/jepsen-matrix.sh).

// TestJepsenShortWitness: two data nodes and a witness (binlogd only),
// append transactions through both data nodes' proxies while, with seed
// 8, the master's every process is SIGKILLed (the other data node must
// take over, the witness giving the majority) and then the witness's
// binlogd is SIGSTOPped for two leases (the data nodes are the
// majority). Nothing acknowledged may be lost, no cycle may appear.
func TestJepsenShortWitness(t *testing.T) {
	cfg := shortConfig(t, "append", "kill,pause", 20*time.Second, 8)
	cfg.Witnesses = 1
	cfg.Schedule = &nemesis.Schedule{Quiet: 3 * time.Second, HoldMin: 3 * time.Second, HoldMax: 4 * time.Second,
		HealTO: 2 * time.Minute, RoundRobin: true}
	res, faults := runShort(t, cfg, 50)
	if len(res.Witnesses) != 1 || res.Witnesses[0] != 3 {
		t.Fatalf("witnesses %v, want [3]", res.Witnesses)
	}
	var masterKilled, witnessHit bool
	for _, f := range faults {
		if f.Outcome != history.OK {
			t.Errorf("fault not injected or healed: %+v", f)
		}
		masterKilled = masterKilled || strings.Contains(f.Note, "mysqld+binlogd+sqlproxy on master")
		witnessHit = witnessHit || strings.Contains(f.Note, "on witness n3")
	}
	if !masterKilled || !witnessHit {
		t.Fatalf("faults %d: master killed %v, witness hit %v; want both (the seed's schedule changed?)", len(faults), masterKilled, witnessHit)
	}
}

// TestJepsenShortLearner: three voters and a learner (node 4), append
// clients on every data node's read/write-split port, the learner's
// included: its read-only ops are single SELECTs that any replica, the
// learner too, may serve (stale allowed, never garbage, aborted, forked
// or non-snapshot reads), transactions go to the master; under kill -9
// of nodes (the learner may be hit too). The learner's linearizable port
// would send every statement to the master (as every proxy's does), so
// the register, bank and set workloads may use it alike; this run covers
// the one port whose answers depend on what the learner applied.
func TestJepsenShortLearner(t *testing.T) {
	cfg := shortConfig(t, "append", nemesis.Kill, 16*time.Second, 2)
	cfg.Nodes, cfg.Learners, cfg.RWSplit = 4, 1, true
	cfg.Schedule = &nemesis.Schedule{Quiet: 3 * time.Second, HoldMin: 3 * time.Second, HoldMax: 4 * time.Second,
		HealTO: 2 * time.Minute, RoundRobin: true}
	res, _ := runShort(t, cfg, 50)
	if len(res.Learners) != 1 || res.Learners[0] != 4 {
		t.Fatalf("learners %v, want [4]", res.Learners)
	}
	info := check(res, "append").Info
	if n, _ := info["replica-reads"].(int); n == 0 {
		t.Fatalf("no read went through the read/write-split port as a replica read: %v", info)
	}
}

// Witnesses and learners are counted among the nodes, numbered after the
// voters (witnesses first), and a cluster must keep a voter with MariaDB.
func TestConfigRoles(t *testing.T) {
	cfg := DefaultConfig()
	cfg.BinDir, cfg.OutDir = t.TempDir(), t.TempDir()
	cfg.Nodes, cfg.Witnesses, cfg.Learners = 5, 1, 2
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	w, l := cfg.RoleIDs()
	if len(w) != 1 || w[0] != 3 || len(l) != 2 || l[0] != 4 || l[1] != 5 {
		t.Fatalf("witnesses %v learners %v, want [3] [4 5]", w, l)
	}
	for _, bad := range [][3]int{{3, 2, 1}, {3, 3, 0}, {2, 0, 2}, {3, -1, 0}} {
		c := DefaultConfig()
		c.BinDir, c.OutDir = t.TempDir(), t.TempDir()
		c.Nodes, c.Witnesses, c.Learners = bad[0], bad[1], bad[2]
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "-witnesses") {
			t.Errorf("nodes %d witnesses %d learners %d: %v", bad[0], bad[1], bad[2], err)
		}
	}
}
