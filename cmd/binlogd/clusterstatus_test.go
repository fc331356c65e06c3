package main

import (
	"reflect"
	"strings"
	"testing"
)

// judge is the whole policy of the exit code: a table of clusters and the
// problems each must report.
func TestJudge(t *testing.T) {
	const v = "v0.4.0"
	master := func(id uint32) *statusJSON {
		return &statusJSON{NodeID: id, Role: "master", MasterID: id, MySQLUp: true, Version: v, LeaseValid: true}
	}
	replica := func(id, m uint32) *statusJSON {
		return &statusJSON{NodeID: id, Role: "replica", MasterID: m, MySQLUp: true, Version: v, LagSeconds: 0}
	}
	with := func(s *statusJSON, f func(*statusJSON)) *statusJSON { f(s); return s }
	rows := func(sts ...*statusJSON) []clusterRow {
		var out []clusterRow
		for i, s := range sts {
			r := clusterRow{ID: uint32(i + 1)}
			if s == nil {
				r.Error = "connection refused"
			} else {
				r.Status = s
			}
			out = append(out, r)
		}
		return out
	}
	lim := lagLimits{seconds: 30, transactions: 1000}
	for _, tc := range []struct {
		name     string
		rows     []clusterRow
		healthy  bool
		master   uint32
		health   []string
		problems []string
	}{
		{"healthy", rows(master(1), replica(2, 1), replica(3, 1)), true, 1,
			[]string{"ok", "ok", "ok"}, []string{}},
		{"a member unreachable", rows(master(1), replica(2, 1), nil), false, 1,
			[]string{"ok", "ok", "unreachable"}, []string{"node 3 unreachable"}},
		{"no master", rows(replica(1, 0), replica(2, 0), replica(3, 0)), false, 0,
			[]string{"ok", "ok", "ok"}, []string{"no master"}},
		{"unsafe and reseed", rows(master(1), with(replica(2, 1), func(s *statusJSON) { s.Role = "unsafe"; s.ReseedNeeded = true }), replica(3, 1)), false, 1,
			[]string{"ok", "unsafe", "ok"}, []string{"node 2 unsafe, reseed_needed"}},
		{"mariadb down", rows(master(1), with(replica(2, 1), func(s *statusJSON) { s.MySQLUp = false; s.LagSeconds = -1 }), replica(3, 1)), false, 1,
			[]string{"ok", "mariadb_down", "ok"}, []string{"node 2 mariadb_down"}},
		{"old binlogd: no version, mysql_up unset", rows(master(1), with(replica(2, 1), func(s *statusJSON) { s.MySQLUp = false; s.Version = "" }), replica(3, 1)), true, 1,
			[]string{"ok", "ok", "ok"}, []string{}},
		{"lag over seconds", rows(master(1), with(replica(2, 1), func(s *statusJSON) { s.LagSeconds = 31 }), replica(3, 1)), false, 1,
			[]string{"ok", "lagging", "ok"}, []string{"node 2 lagging"}},
		{"lag over transactions", rows(master(1), replica(2, 1), with(replica(3, 1), func(s *statusJSON) { s.LagTransactions = 1001 })), false, 1,
			[]string{"ok", "ok", "lagging"}, []string{"node 3 lagging"}},
		{"lag at the limits is fine; unknown seconds too", rows(master(1), with(replica(2, 1), func(s *statusJSON) { s.LagSeconds = 30; s.LagTransactions = 1000 }), with(replica(3, 1), func(s *statusJSON) { s.LagSeconds = -1 })), true, 1,
			[]string{"ok", "ok", "ok"}, []string{}},
		{"a replica sees another master", rows(master(1), replica(2, 1), replica(3, 2)), false, 1,
			[]string{"ok", "ok", "ok"}, []string{"node 3 sees master 2, node 1 is master"}},
		{"two masters", rows(master(1), master(2), replica(3, 1)), false, 0,
			[]string{"ok", "ok", "ok"}, []string{"more than one member says master: [1 2]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := clusterJSON{Members: tc.rows}
			judge(&v, lim)
			var health []string
			for _, r := range v.Members {
				health = append(health, r.Health)
			}
			if v.Healthy != tc.healthy || v.MasterID != tc.master || !reflect.DeepEqual(health, tc.health) || !reflect.DeepEqual(v.Problems, tc.problems) {
				t.Fatalf("healthy=%v master=%d health=%q problems=%q; want %v %d %q %q",
					v.Healthy, v.MasterID, health, v.Problems, tc.healthy, tc.master, tc.health, tc.problems)
			}
		})
	}
}

// Usage errors exit 2 before anything is dialled.
func TestClusterUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"stats"}, {"status", "-bogus"}, {"status", "-timeout", "0s"},
		{"status", "-max-lag-seconds", "-1"}, {"status", "extra"}, {"status", "-addr", ""}} {
		var out, errb strings.Builder
		if code := cmdCluster(args, &out, &errb); code != exitUsage {
			t.Errorf("%q: exit %d, want %d (stderr %q)", args, code, exitUsage, errb.String())
		}
	}
}
