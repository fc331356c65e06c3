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
