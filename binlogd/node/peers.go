package node

import (
	"fmt"
	"sync"

	"google.golang.org/grpc"

	pb "phxgo/proto"
)

var peerConns sync.Map // addr -> *grpc.ClientConn

func (n *Node) peerAdmin(id uint32) (pb.AdminClient, error) {
	for _, m := range n.members() {
		if m.ID != id {
			continue
		}
		if cc, ok := peerConns.Load(m.GRPCAddr); ok {
			return pb.NewAdminClient(cc.(*grpc.ClientConn)), nil
		}
		cc, err := grpc.NewClient(m.GRPCAddr, n.peerLink...)
		if err != nil {
			return nil, err
		}
		actual, loaded := peerConns.LoadOrStore(m.GRPCAddr, cc)
		if loaded {
			cc.Close()
		}
		return pb.NewAdminClient(actual.(*grpc.ClientConn)), nil
	}
	return nil, fmt.Errorf("node %d is not a member", id)
}
