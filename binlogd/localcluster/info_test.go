package localcluster

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"phxgo/binlogd/config"
)

// TestInfoRolesAndReplAccount: cluster.json marks each node's voter and
// witness flags (a learner is no voter, a witness is one) and lists the
// outside replicas' account of the credentials file at top level; it is
// readable by its owner only (it holds passwords).
func TestInfoRolesAndReplAccount(t *testing.T) {
	bin := t.TempDir()
	for _, b := range []string{"binlogd", "sqlproxy"} {
		if err := os.WriteFile(filepath.Join(bin, b), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	spec := Spec{Dir: t.TempDir(), BasePort: 20000, BinDir: bin, Proxy: true, InsecureNoTLS: true}
	spec.Nodes, spec.Witnesses, spec.Learners = RoleIDs(2, 1, 1)
	if err := Prepare(spec); err != nil {
		t.Fatal(err)
	}
	if err := Open(spec).WriteInfo(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(spec.Dir, "cluster.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Nodes    []map[string]any `json:"nodes"`
		ReplUser string           `json:"repl_user"`
		ReplPass string           `json:"repl_password"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	want := []struct{ voter, witness bool }{{true, false}, {true, false}, {true, true}, {false, false}}
	if len(raw.Nodes) != len(want) {
		t.Fatalf("%d nodes in cluster.json, want %d:\n%s", len(raw.Nodes), len(want), b)
	}
	for i, w := range want {
		n := raw.Nodes[i]
		if n["voter"] != w.voter || n["witness"] != w.witness {
			t.Errorf("node %v: voter %v witness %v, want %v %v", n["id"], n["voter"], n["witness"], w.voter, w.witness)
		}
	}
	if raw.Nodes[2]["mysql_addr"] != "" || raw.Nodes[2]["proxy_addr"] != "" || raw.Nodes[2]["repl_addr"] != "" {
		t.Errorf("witness lists MariaDB, proxy or replication addresses: %v", raw.Nodes[2])
	}
	cr, err := loadCred(spec.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if raw.ReplUser == "" || raw.ReplUser != cr.ReplUser || raw.ReplPass != cr.ReplPassword || len(raw.ReplPass) < 16 {
		t.Errorf("repl account %q/%q, credentials have %q/%q", raw.ReplUser, raw.ReplPass, cr.ReplUser, cr.ReplPassword)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("cluster.json mode %v (%v), want 0600", st.Mode().Perm(), err)
	}
	// Every node's config marks the learner; binlogd loads them all.
	for id := 1; id <= 4; id++ {
		c, err := config.Load(filepath.Join(spec.NodeDir(id), "binlogd.json"))
		if err != nil {
			t.Fatalf("node %d: %v", id, err)
		}
		if len(c.Members) != 4 || !c.Members[3].Learner || c.Members[2].Learner || c.IsLearner() != (id == 4) || c.SuperviseMySQL == (id == 3) {
			t.Errorf("node %d: members %+v learner %v supervise %v", id, c.Members, c.IsLearner(), c.SuperviseMySQL)
		}
	}
	both := spec
	both.Learners = []int{3}
	if err := Prepare(both); err == nil {
		t.Error("a node both witness and learner was accepted")
	}
}
