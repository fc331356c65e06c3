package node

import (
	"fmt"
	"sync"

	"google.golang.org/grpc"

	"phxgo/binlogd/config"
	pb "phxgo/proto"
)

// peerConns: connections to members, by peerKey. The key holds the id
// too: a connection's credentials check that the server is that member
// (dialOptionTo), so a member's address taken over by another id needs a
// new connection.
var peerConns sync.Map // peerKey -> *grpc.ClientConn

func peerKey(m config.Member) string { return fmt.Sprintf("%d@%s", m.ID, m.GRPCAddr) }

func (n *Node) peerAdmin(id uint32) (pb.AdminClient, error) {
	for _, m := range n.members() {
		if m.ID != id {
			continue
		}
		if cc, ok := peerConns.Load(peerKey(m)); ok {
			return pb.NewAdminClient(cc.(*grpc.ClientConn)), nil
		}
		cc, err := grpc.NewClient(m.GRPCAddr, append(n.peerLink[:len(n.peerLink):len(n.peerLink)], n.dialOptionTo(m.ID))...)
		if err != nil {
			return nil, err
		}
		actual, loaded := peerConns.LoadOrStore(peerKey(m), cc)
		if loaded {
			cc.Close()
		}
		return pb.NewAdminClient(actual.(*grpc.ClientConn)), nil
	}
	return nil, fmt.Errorf("node %d is not a member", id)
}
