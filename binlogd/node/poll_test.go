package node

import (
	"database/sql"
	"testing"
	"time"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/role"
	"phxgo/masterlease"
)

// The poll may go quiet only while MariaDB has nothing to show: every
// reason to look again must end the quiet.
func TestPollQuietOnlyWhenSettled(t *testing.T) {
	g := binlog.GTID{Domain: 0, Server: 1, Seq: 42}
	newer := binlog.GTID{Domain: 0, Server: 1, Seq: 43}
	lease := func(r masterlease.Role, last binlog.GTID) masterlease.Status {
		var s masterlease.Status
		s.Role = r
		s.State.LastGTID = masterlease.GTID(last)
		return s
	}
	replicating := role.Status{MasterHost: "127.0.0.1", IORunning: "Yes", SQLRunning: "Yes", SecondsBehind: sql.NullInt64{Valid: true}}
	lagging := replicating
	lagging.SecondsBehind.Int64 = 3
	ioStopped := replicating
	ioStopped.IORunning = "Connecting"

	quietCases := []struct {
		name string
		ls   masterlease.Status
		stop bool
		want bool
	}{
		{"replica applied the whole log", lease(masterlease.RoleReplica, g), false, true},
		{"master applied the whole log", lease(masterlease.RoleMaster, g), false, true},
		{"the log moved on", lease(masterlease.RoleReplica, newer), false, false},
		{"candidate waits to catch up", lease(masterlease.RoleCandidate, g), false, false},
		{"stopping", lease(masterlease.RoleReplica, g), true, false},
	}
	for _, c := range quietCases {
		if got := quiet(c.ls, g, c.stop); got != c.want {
			t.Errorf("quiet, %s: got %v, want %v", c.name, got, c.want)
		}
	}

	settledCases := []struct {
		name    string
		ls      masterlease.Status
		durable binlog.GTID
		known   bool
		st      role.Status
		want    bool
	}{
		{"replica caught up, synced, replicating", lease(masterlease.RoleReplica, g), g, true, replicating, true},
		{"master caught up and synced", lease(masterlease.RoleMaster, g), g, true, role.Status{}, true},
		{"not synced yet (relaxed replica)", lease(masterlease.RoleReplica, g), binlog.GTID{Seq: 40, Server: 1}, true, replicating, false},
		{"synced position unknown", lease(masterlease.RoleReplica, g), g, false, replicating, false},
		{"behind the log", lease(masterlease.RoleReplica, newer), g, true, replicating, false},
		{"replica lagging", lease(masterlease.RoleReplica, g), g, true, lagging, false},
		{"replica IO thread not running", lease(masterlease.RoleReplica, g), g, true, ioStopped, false},
		{"replica not replicating", lease(masterlease.RoleReplica, g), g, true, role.Status{}, false},
	}
	for _, c := range settledCases {
		if got := settledMySQL(c.ls, g, c.durable, c.known, c.st); got != c.want {
			t.Errorf("settledMySQL, %s: got %v, want %v", c.name, got, c.want)
		}
	}
}

// A change of role, master or term ends the quiet: replication is
// repointed, and status must show it.
func TestPollSameTerm(t *testing.T) {
	base := masterlease.Status{Role: masterlease.RoleReplica}
	base.State.Master, base.State.Epoch = 2, 7
	if !sameTerm(base, base) {
		t.Fatal("the same lease view is not the same term")
	}
	role := base
	role.Role = masterlease.RoleMaster
	master := base
	master.State.Master = 3
	epoch := base
	epoch.State.Epoch = 8
	for name, other := range map[string]masterlease.Status{"role": role, "master": master, "epoch": epoch} {
		if sameTerm(base, other) {
			t.Errorf("a change of %s kept the quiet", name)
		}
	}
}

// SHOW SLAVE STATUS is re-read when its view is old or may have changed:
// never read, a replication thread started or stopped, or a new role,
// master or term; otherwise the poll reuses it.
func TestPollNeedRepl(t *testing.T) {
	now := time.Now()
	base := masterlease.Status{Role: masterlease.RoleReplica}
	base.State.Master, base.State.Epoch = 2, 7
	fresh := pollState{replAt: now, replLease: base, replRunning: "ON"}
	if fresh.needRepl(base, "ON", now.Add(replStatusEvery/2)) {
		t.Error("a fresh, unchanged view was re-read")
	}
	newTerm := base
	newTerm.State.Epoch = 8
	cases := map[string]struct {
		ps      pollState
		ls      masterlease.Status
		running string
		at      time.Time
	}{
		"never read":     {pollState{}, base, "ON", now},
		"old":            {fresh, base, "ON", now.Add(replStatusEvery)},
		"thread stopped": {fresh, base, "OFF", now},
		"new term":       {fresh, newTerm, "ON", now},
	}
	for name, c := range cases {
		if !c.ps.needRepl(c.ls, c.running, c.at) {
			t.Errorf("%s: SHOW SLAVE STATUS not re-read", name)
		}
	}
}
