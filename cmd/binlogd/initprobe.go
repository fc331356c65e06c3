package main

import (
	"context"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	pb "phxgo/proto"
)

// initProbeDial is how -probe opens connections; every packet init sends
// goes through it (tests swap it to prove that, without -probe, none is).
var initProbeDial = func(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

// probeNodes is -probe: it refuses when something answers at a node's
// grpc address, which would mean that node already runs (a binlogd of
// another cluster, or any other server on that port). Without -probe init
// sends nothing: the addresses may not be this operator's to probe.
func probeNodes(p *initPlan) error {
	for _, n := range p.nodes {
		addr := n.spec.grpc
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		c, err := initProbeDial(ctx, addr)
		cancel()
		if err != nil {
			continue // nothing listens (or unreachable from here): fine
		}
		c.Close()
		if st, err := probeStatus(addr); err == nil {
			var ids []uint32
			for _, m := range st.Members {
				ids = append(ids, m.Id)
			}
			return fmt.Errorf("init: node %d: a binlogd already answers at %s (node %d of a cluster with members %v); refusing to create a new cluster over it", n.cfg.ID, addr, st.NodeId, ids)
		}
		return fmt.Errorf("init: node %d: a server already answers at %s (a binlogd with mutual TLS shows a plain client only a closed connection); refusing to create a new cluster over it", n.cfg.ID, addr)
	}
	return nil
}

// probeStatus asks addr for a binlogd Status in plain gRPC.
func probeStatus(addr string) (*pb.NodeStatus, error) {
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(initProbeDial))
	if err != nil {
		return nil, err
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return pb.NewAdminClient(cc).Status(ctx, &pb.StatusRequest{})
}
