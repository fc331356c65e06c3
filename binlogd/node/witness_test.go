package node

import (
	"strings"
	"testing"

	"phxgo/binlogd/config"
	pb "phxgo/proto"
)

// TestLeaseTargetError is the proposer-side refusal: no switchover or
// handover names a witness, this node, or a stranger.
func TestLeaseTargetError(t *testing.T) {
	ms := []config.Member{{ID: 1}, {ID: 2}, {ID: 3, Witness: true}}
	for _, c := range []struct {
		self, to uint32
		want     string // "" ok, else a fragment of the error
	}{
		{1, 2, ""},
		{2, 1, ""},
		{1, 3, "witness"},
		{2, 3, "witness"},
		{1, 1, "this node"},
		{1, 4, "not a member"},
		{1, 0, "not a member"},
	} {
		err := leaseTargetError(ms, c.self, c.to)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("self %d to %d: %v, want ok", c.self, c.to, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("self %d to %d: %v, want an error about %q", c.self, c.to, err, c.want)
		}
	}
}

// TestWitnessStatus: a witness reports its role and no MariaDB, unless
// it is UNSAFE (storage failed), which wins.
func TestWitnessStatus(t *testing.T) {
	st := &pb.NodeStatus{Role: pb.Role_ROLE_REPLICA, Ready: true, MysqlGtidPos: "0-0-0", MysqlDurableGtidPos: "0-0-0", LagTransactions: 7, LagSeconds: 3}
	witnessStatus(st)
	if st.Role != pb.Role_ROLE_WITNESS || st.Ready || st.MysqlGtidPos != "" || st.MysqlDurableGtidPos != "" || st.LagTransactions != 0 || st.LagSeconds != -1 {
		t.Fatalf("witness status: %v", st)
	}
	un := &pb.NodeStatus{Role: pb.Role_ROLE_UNSAFE}
	witnessStatus(un)
	if un.Role != pb.Role_ROLE_UNSAFE {
		t.Fatalf("an UNSAFE witness reported %v", un.Role)
	}
}
