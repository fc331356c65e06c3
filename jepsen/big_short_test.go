package jepsen

import (
	"testing"
	"time"

	"phxgo/jepsen/nemesis"
)

// TestJepsenShortBig: the big workload in small (8 MiB transactions of
// 1 MiB rows, 16 MiB bulk loads of 1 KiB rows in one statement) while
// the master is killed and partitioned. Every batch must be whole
// exactly once or absent; acknowledged ones present. The full form (256
// MiB transactions, 2 GiB loads) runs in make jepsen.
func TestJepsenShortBig(t *testing.T) {
	cfg := shortConfig(t, "big", nemesis.Kill+","+nemesis.Partition, 40*time.Second, 3)
	cfg.Concurrency, cfg.Rate = 2, 2 // paced: an op that fails at once (no master yet) is not retried in a tight loop
	cfg.OpTimeout = 3 * time.Minute
	cfg.Workloads.BigTxnBytes, cfg.Workloads.BigLoadBytes = 8<<20, 16<<20
	cfg.Schedule = &nemesis.Schedule{Quiet: 6 * time.Second, HoldMin: 4 * time.Second, HoldMax: 5 * time.Second,
		HealTO: 2 * time.Minute, RoundRobin: true}
	res, faults := runShort(t, cfg, 2)
	if len(faults) == 0 {
		t.Fatal("no fault injected")
	}
	b := check(res, "big")
	if b.Checker == "" {
		t.Fatal("no big check")
	}
	if n, _ := b.Info["ok-adds"].(int); n < 2 {
		t.Fatalf("only %d acknowledged batches: %v", n, b.Info)
	}
}
