package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// learnerCfg: nodes 1-3 vote, node 4 is a learner; the file is node id's.
func learnerCfg(id string) string {
	return `{"id":` + id + `,"insecure_no_tls":true,"dir":"n","mysql_dir":"n/mysql","credentials_file":"cred.json",
 "members":[
  {"id":1,"grpc_addr":"127.0.0.1:1","mysql_addr":"127.0.0.1:2"},
  {"id":2,"grpc_addr":"127.0.0.1:4","mysql_addr":"127.0.0.1:5"},
  {"id":3,"grpc_addr":"127.0.0.1:7","mysql_addr":"127.0.0.1:8"},
  {"id":4,"grpc_addr":"127.0.0.1:10","mysql_addr":"127.0.0.1:11","learner":true}]}`
}

// TestLearnerConfig: a learner does not count toward the odd number of
// voters; it is not a witness; some voter runs MariaDB.
func TestLearnerConfig(t *testing.T) {
	dir := t.TempDir()
	c, err := Load(write(t, dir, "n4.json", learnerCfg("4"), 0o644))
	if err != nil {
		t.Fatal(err)
	}
	if !c.IsLearner() || !slices.Equal(c.Learners(), []uint32{4}) {
		t.Fatalf("IsLearner %v, Learners %v", c.IsLearner(), c.Learners())
	}
	if c1, err := Load(write(t, dir, "n1.json", learnerCfg("1"), 0o644)); err != nil || c1.IsLearner() {
		t.Fatalf("node 1: %v, IsLearner %v", err, c1.IsLearner())
	}
	for _, tc := range []struct{ name, body, key string }{
		{"even voters", strings.Replace(learnerCfg("1"), `"learner":true`, `"learner":false`, 1), `"members"`},
		{"learner witness", strings.Replace(learnerCfg("1"), `"mysql_addr":"127.0.0.1:11","learner":true`, `"witness":true,"learner":true`, 1), `members[3].learner`},
		{"no data voter", strings.NewReplacer(
			`"mysql_addr":"127.0.0.1:2"}`, `"mysql_addr":"127.0.0.1:2","learner":true}`,
			`"mysql_addr":"127.0.0.1:5"}`, `"mysql_addr":"127.0.0.1:5","learner":true}`,
			`"mysql_addr":"127.0.0.1:8"}`, `"mysql_addr":"127.0.0.1:8","learner":true}`).Replace(learnerCfg("1")), `"members"`},
	} {
		_, err := Load(write(t, dir, "bad.json", tc.body, 0o644))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s: err %v, want ErrInvalid naming %s", tc.name, err, tc.key)
		}
	}
}
