package topology

import (
	"testing"

	pb "phxgo/proto"
)

// A witness stores and votes on the log but has no MariaDB: it is never a
// read replica, even for a proxy that runs no health checks.
func TestFromStatusLeavesWitnessesOut(t *testing.T) {
	st := &pb.NodeStatus{NodeId: 2, MasterId: 1, Role: pb.Role_ROLE_REPLICA, Ready: true, Members: []*pb.Member{
		{Id: 1, MysqlAddr: "127.0.0.1:3306", ProxyAddr: "127.0.0.1:6033"},
		{Id: 2, MysqlAddr: "127.0.0.1:3307"},
		{Id: 3, Witness: true},
	}}
	v := FromStatus(st)
	if v.MasterMySQLAddr != "127.0.0.1:3306" || v.SelfMySQLAddr != "127.0.0.1:3307" || v.IsMaster {
		t.Fatalf("view %+v", v)
	}
	if len(v.Replicas) != 1 || v.Replicas[0].ID != 2 {
		t.Fatalf("replicas %+v, want only node 2", v.Replicas)
	}
}

// A learner follows the log with MariaDB: a read replica like any, for
// its own proxy and the others (the proxy's health checks judge its lag).
func TestFromStatusLearnersAreReplicas(t *testing.T) {
	members := []*pb.Member{
		{Id: 1, MysqlAddr: "127.0.0.1:3306", ProxyAddr: "127.0.0.1:6033"},
		{Id: 2, MysqlAddr: "127.0.0.1:3307"},
		{Id: 3, Witness: true},
		{Id: 4, MysqlAddr: "127.0.0.1:3309", Learner: true},
	}
	for _, self := range []uint32{2, 4} {
		v := FromStatus(&pb.NodeStatus{NodeId: self, MasterId: 1, Role: pb.Role_ROLE_REPLICA, Learner: self == 4, Members: members})
		if len(v.Replicas) != 2 || v.Replicas[0].ID != 2 || v.Replicas[1].ID != 4 || v.Replicas[1].MySQLAddr != "127.0.0.1:3309" {
			t.Fatalf("node %d's view: replicas %+v, want nodes 2 and 4", self, v.Replicas)
		}
		if v.IsMaster || v.MasterMySQLAddr != "127.0.0.1:3306" {
			t.Fatalf("node %d's view %+v", self, v)
		}
	}
}
