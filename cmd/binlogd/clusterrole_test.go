package main

import (
	"strings"
	"testing"
)

// The ROLE column: a member's own status role, except that a learner
// replicating says replica and is shown as learner, and an unreachable
// member shows what the membership knows.
func TestRowRole(t *testing.T) {
	st := func(role string) *statusJSON {
		return &statusJSON{Role: role, MySQLUp: role != "witness", Version: "v"}
	}
	for _, tc := range []struct {
		st   *statusJSON
		kind kind
		want string
	}{
		{st("master"), kindVoter, "master"},
		{st("replica"), kindVoter, "replica"},
		{st("replica"), kindLearner, "learner"},
		{st("unsafe"), kindLearner, "unsafe"},
		{st("witness"), kindWitness, "witness"},
		{st("unknown"), kindWitness, "witness"},
		{st("candidate"), kindVoter, "candidate"},
		{nil, kindVoter, "-"},
		{nil, kindWitness, "witness"},
		{nil, kindLearner, "learner"},
	} {
		r := clusterRow{Status: tc.st, kind: tc.kind}
		if got := rowRole(&r); got != tc.want {
			t.Errorf("status %+v kind %d: role %q, want %q", tc.st, tc.kind, got, tc.want)
		}
	}
	// The table shows the ROLE column so, and a witness is healthy
	// without MariaDB even when its status says unknown.
	v := clusterJSON{Members: []clusterRow{
		{ID: 1, Status: &statusJSON{Role: "master", MasterID: 1, MySQLUp: true, Version: "v"}},
		{ID: 2, Status: &statusJSON{Role: "replica", MasterID: 1, MySQLUp: true, Version: "v"}, kind: kindLearner},
		{ID: 3, Status: &statusJSON{Role: "unknown", MasterID: 1, Version: "v"}, kind: kindWitness},
		{ID: 4, Error: "connection refused", kind: kindWitness},
	}}
	judge(&v, lagLimits{})
	var b strings.Builder
	if err := printCluster(&b, v); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + b.String())
	lines := strings.Split(b.String(), "\n")
	for i, want := range []string{"master", "learner", "witness", "witness"} {
		if f := strings.Fields(lines[i+1]); len(f) < 2 || f[1] != want {
			t.Errorf("row %d: %q, want role %s", i+1, lines[i+1], want)
		}
	}
	if v.Members[2].Health != "ok" || v.Members[3].Health != "unreachable" {
		t.Errorf("health %q %q", v.Members[2].Health, v.Members[3].Health)
	}
}
