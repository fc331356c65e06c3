package main

import (
	"strings"
	"testing"
)

// TestCommitCycleTable: the master's counters give group size, interval
// and ACK wait for both systems; capture's split appears for phxgo only.
func TestCommitCycleTable(t *testing.T) {
	semi := insertRun(semiDirect, 16, 40000, 10, 5, 6, 0)
	semi.Server = map[string]float64{
		masterKey("Binlog_commits"): 40000, masterKey("Binlog_group_commits"): 10000, // 4 per group, one per ms
		masterKey("Rpl_semi_sync_master_tx_wait_time"): 20_000_000, masterKey("Rpl_semi_sync_master_tx_waits"): 40000, // 0.5 ms each (µs)
		"Binlog_commits": 120000, "Binlog_group_commits": 90000, // replicas included: not used
	}
	phx := insertRun(phxMaster, 16, 20000, 10, 0, 12, 150)
	phx.Server = map[string]float64{
		masterKey("Binlog_commits"): 20000, masterKey("Binlog_group_commits"): 2500,
		masterKey("Rpl_semi_sync_master_tx_wait_time"): 40_000_000, masterKey("Rpl_semi_sync_master_tx_waits"): 20000,
	}
	phx.Binlogd = map[string]float64{
		"phxgo_capture_batches_total": 2500, "phxgo_capture_propose_to_durable_seconds_total": 3.75,
		"phxgo_capture_overlapped_batches_total": 500, "phxgo_capture_starved_batches_total": 2000,
		"phxgo_capture_starved_seconds_total": 5,
	}
	noGroups := insertRun(phxOther, 16, 100, 10, 0, 12, 150) // no master counters: no row
	var b strings.Builder
	printCommitCycle(&b, index([]record{semi, phx, noGroups}))
	out := b.String()
	for _, want := range []string{
		"semisync-direct         16      4.00      1.00      0.50\n",
		"phxgo-proxy-master      16      8.00      4.00      2.00      1.50       20%       80%       2.50\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, phxOther) {
		t.Errorf("a run without the master's group commits got a row:\n%s", out)
	}
	var none strings.Builder
	printCommitCycle(&none, index([]record{noGroups}))
	if none.Len() != 0 {
		t.Errorf("no master counters, yet a table:\n%s", none.String())
	}
}
