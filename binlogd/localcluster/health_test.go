package localcluster

import (
	"testing"

	"phxgo/binlogd/binlog"
	pb "phxgo/proto"
)

// TestReached: a replica is caught up when it holds the log's newest
// valid GTID, or, under load, the target a waiter fixed earlier.
func TestReached(t *testing.T) {
	target := binlog.GTID{Domain: 0, Server: 3, Seq: 100}
	for _, tc := range []struct {
		name   string
		pos    string
		target *binlog.GTID
		want   bool
	}{
		{"exact", "0-3-120", nil, true},
		{"behind, no target", "0-3-110", nil, false},
		{"behind, zero target", "0-3-110", &binlog.GTID{}, false},
		{"past the target", "0-3-110", &target, true},
		{"at the target", "0-3-100", &target, true},
		{"short of the target", "0-3-99", &target, false},
		{"new term, past the target", "0-2-101", &target, true},
		{"other domain only", "1-3-500", &target, false},
		{"garbage", "x", &target, false},
		{"empty", "", &target, false},
	} {
		st := &pb.NodeStatus{MysqlGtidPos: tc.pos, LastValidGtid: "0-3-121"}
		if got := reached(st, "0-3-120", tc.target); got != tc.want {
			t.Errorf("%s: reached(%q) = %v, want %v", tc.name, tc.pos, got, tc.want)
		}
	}
}
