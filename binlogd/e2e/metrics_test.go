package e2e

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"phxgo/binlogd/localcluster"
)

// scrape reads node id's /metrics into name{labels} -> value.
func scrape(t *testing.T, c *localcluster.Cluster, id uint32) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + c.HTTPAddr(id) + "/metrics")
	if err != nil {
		t.Fatalf("node %d metrics: %v", id, err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, val, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			t.Fatalf("node %d metrics: bad line %q", id, line)
		}
		out[name] = v
	}
	return out
}

// checkWriteMetrics: after at least txns acknowledged transactions on
// master and every node identical, the metrics say so: the master
// captured them and timed its proposals, the leader batched them, and
// every replica's lag drops to zero.
func checkWriteMetrics(t *testing.T, c *localcluster.Cluster, master uint32, txns int) {
	t.Helper()
	m := scrape(t, c, master)
	for name, min := range map[string]float64{
		"phxgo_binlogd_captured_transactions_total":            float64(txns),
		"phxgo_binlogd_semisync_acks_total":                    1,
		"phxgo_paxos_commit_latency_seconds_count":             1,
		`phxgo_paxos_commit_latency_seconds_bucket{le="+Inf"}`: 1,
		`phxgo_binlogd_role{role="master"}`:                    1,
		"phxgo_wal_saves_total":                                1,
		"phxgo_wal_syncs_total":                                1,
		"phxgo_wal_segments_total":                             1,
		"phxgo_capture_peak_buffered_bytes":                    1,
	} {
		if m[name] < min {
			t.Errorf("master %d: %s = %v, want >= %v", master, name, m[name], min)
		}
	}
	var values, cmds float64
	for _, id := range c.IDs() {
		r := scrape(t, c, id)
		values += r["phxgo_paxos_values_proposed_total"]
		cmds += r["phxgo_paxos_commands_proposed_total"]
		if id == master {
			continue
		}
		if r["phxgo_binlogd_captured_transactions_total"] != 0 {
			t.Errorf("replica %d captured transactions: %v", id, r["phxgo_binlogd_captured_transactions_total"])
		}
		deadline := time.Now().Add(15 * time.Second)
		for r["phxgo_binlogd_replica_lag_transactions"] != 0 {
			if time.Now().After(deadline) {
				t.Errorf("replica %d: replica_lag_transactions = %v with identical data", id, r["phxgo_binlogd_replica_lag_transactions"])
				break
			}
			time.Sleep(100 * time.Millisecond)
			r = scrape(t, c, id)
		}
	}
	if values < 1 || cmds < values {
		t.Errorf("values proposed %v, commands in them %v: want >= 1 value, >= 1 command each", values, cmds)
	}
	checkMonitoringNames(t, c)
	if t.Failed() {
		t.Log(fmt.Sprint(m))
	}
}
