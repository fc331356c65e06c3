package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"phxgo/binlogd/localcluster"
)

// clusterView is the part of `binlogd cluster status -json` this test
// reads (README "Cluster status" has every key).
type clusterView struct {
	Healthy  bool     `json:"healthy"`
	MasterID uint32   `json:"master_id"`
	Problems []string `json:"problems"`
	Members  []struct {
		ID     uint32 `json:"id"`
		Health string `json:"health"`
		Error  string `json:"error"`
		Status *struct {
			Role            string  `json:"role"`
			Epoch           uint64  `json:"epoch"`
			ChosenIndex     uint64  `json:"chosen_index"`
			LeaseValid      bool    `json:"lease_valid"`
			LeaseRemaining  float64 `json:"lease_remaining_seconds"`
			LagTransactions uint64  `json:"lag_transactions"`
			Version         string  `json:"version"`
		} `json:"status"`
	} `json:"members"`
}

// The operator's whole-cluster view against a real 3-node cluster: three
// rows, one master, exit 0; with one node's binlogd killed, still three
// rows, that one "unreachable", exit 1 (and a dead first -addr falls
// through to the next).
func TestClusterStatusCommand(t *testing.T) {
	c, master := localcluster.StartForTest(t, binDir, 3, 3*time.Second, false)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	st, err := c.Status(ctx, master)
	if err != nil {
		t.Fatal(err)
	}
	addr := map[uint32]string{}
	for _, m := range st.Members {
		addr[m.Id] = m.GrpcAddr
	}
	victim := master%3 + 1 // a replica
	// The node's own config carries its tls_* keys when the cluster has
	// TLS, so the command dials the way an operator on that host would.
	cfg := filepath.Join(c.Spec.NodeDir(int(master)), "binlogd.json")
	run := func(addrs string, asJSON bool) (string, int, time.Duration) {
		args := []string{"cluster", "status", "-addr", addrs, "-config", cfg, "-timeout", "2s"}
		if asJSON {
			args = append(args, "-json")
		}
		start := time.Now()
		out, err := exec.CommandContext(ctx, filepath.Join(binDir, "binlogd"), args...).Output()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
			out = append(out, ee.Stderr...)
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code, time.Since(start)
	}
	parse := func(out string) clusterView {
		var v clusterView
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("cluster status -json: %v\n%s", err, out)
		}
		return v
	}

	// Healthy: await it (a replica may still be applying the last grant).
	var v clusterView
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, code, _ := run(addr[master], true)
		v = parse(out)
		if code == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never healthy: exit %d\n%s", code, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(v.Members) != 3 || !v.Healthy || v.MasterID != master || len(v.Problems) != 0 {
		t.Fatalf("healthy cluster: %+v", v)
	}
	masters := 0
	for _, r := range v.Members {
		if r.Health != "ok" || r.Status == nil || r.Status.Version == "" || r.Status.ChosenIndex == 0 {
			t.Fatalf("row %d: %+v %+v", r.ID, r, r.Status)
		}
		if r.Status.Role == "master" {
			masters++
			if r.ID != master || !r.Status.LeaseValid || r.Status.LeaseRemaining <= 0 {
				t.Fatalf("master row %d: %+v", r.ID, r.Status)
			}
		}
	}
	if masters != 1 {
		t.Fatalf("%d rows say master", masters)
	}
	// The VERSION column and binlogd's build-info metric name the same build.
	ver := v.Members[0].Status.Version
	found := false
	for name, val := range scrape(t, c, master) {
		if strings.HasPrefix(name, "phxgo_build_info{") && strings.Contains(name, `version="`+ver+`"`) && val == 1 {
			found = true
		}
	}
	if !found {
		t.Fatalf("node %d /metrics has no phxgo_build_info{version=%q} 1", master, ver)
	}
	// `binlogd status -json` of one node: the README's keys, numbers as numbers.
	one, err := exec.CommandContext(ctx, filepath.Join(binDir, "binlogd"), "status", "-addr", addr[master], "-config", cfg, "-json").Output()
	if err != nil {
		t.Fatalf("status -json: %v\n%s", err, one)
	}
	var node map[string]any
	if err := json.Unmarshal(one, &node); err != nil {
		t.Fatalf("status -json: %v\n%s", err, one)
	}
	for _, k := range []string{"node_id", "epoch", "chosen_index", "first_index", "log_bytes", "lag_transactions", "lag_seconds", "lease_remaining_seconds"} {
		if _, ok := node[k].(float64); !ok {
			t.Fatalf("status -json: %q is %#v, want a number\n%s", k, node[k], one)
		}
	}
	if node["role"] != "master" || node["reseed_needed"] != false || node["version"] != ver {
		t.Fatalf("status -json of the master:\n%s", one)
	}
	text, code, took := run(addr[master], false)
	t.Logf("healthy (exit %d, %v):\n%s", code, took.Round(time.Millisecond), text)
	if code != 0 || !strings.Contains(text, "cluster healthy: master "+fmt.Sprint(master)) {
		t.Fatalf("text mode: exit %d\n%s", code, text)
	}

	// One binlogd gone: its row says so; the command still answers, exit 1.
	if err := c.Kill(ctx, victim, "binlogd"); err != nil {
		t.Fatal(err)
	}
	out, code, took := run(addr[victim]+","+addr[master], true) // the dead one first: the next gives the membership
	v = parse(out)
	if code != 1 || v.Healthy || len(v.Members) != 3 {
		t.Fatalf("one binlogd down: exit %d, %s", code, out)
	}
	for _, r := range v.Members {
		want := "ok"
		if r.ID == victim {
			want = "unreachable"
		}
		if r.Health != want || (r.ID == victim) != (r.Status == nil) || (r.ID == victim) != (r.Error != "") {
			t.Fatalf("row %d: health %q error %q status %v; want %q", r.ID, r.Health, r.Error, r.Status, want)
		}
	}
	if want := fmt.Sprintf("node %d unreachable", victim); len(v.Problems) != 1 || v.Problems[0] != want {
		t.Fatalf("problems %q, want [%q]", v.Problems, want)
	}
	text, code, took2 := run(addr[master], false)
	t.Logf("node %d's binlogd killed (json %v, text %v, exit %d):\n%s", victim, took.Round(time.Millisecond), took2.Round(time.Millisecond), code, text)
	if code != 1 || !strings.Contains(text, "cluster UNHEALTHY") {
		t.Fatalf("text mode: exit %d\n%s", code, text)
	}
}
