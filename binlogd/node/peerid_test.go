package node

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"phxgo/binlogd/mtls"
	"phxgo/binlogd/mtls/mtlstest"
	"phxgo/internal/testkit"
	pb "phxgo/proto"
)

// TestPaxosRefusesImpostorPeer is the red-team finding: on node 3's
// grpc_addr sits a server with proxy 3's certificate, valid for the host
// and signed by the cluster CA. Nodes 1 and 2 (a majority) run Paxos;
// neither may stream a Paxos message, nor make an Admin call, to the
// impostor: each link checks that the server is the member dialled
// (node 3's certificate), and the handshake fails naming both. The
// impostor counts every call that reaches it: none may.
func TestPaxosRefusesImpostorPeer(t *testing.T) {
	ca := mtlstest.MakeCA(t, 3)
	logs := &testkit.LogBuffer{}
	cfgs, nodes, _ := testNodesOf(t, []mtls.Files{mtlstest.Files(ca, 1), mtlstest.Files(ca, 2), mtlstest.Files(ca, 3)},
		map[uint32]bool{3: true}, func(n *Node) {
			n.log = slog.New(slog.NewTextHandler(logs, nil)).With("node", n.cfg.ID)
		})
	lis, err := net.Listen("tcp", cfgs[0].Members[2].GRPCAddr)
	if err != nil {
		t.Fatal(err)
	}
	calls := mtlstest.Impostor(t, lis, mtlstest.Load(t, mtlstest.Of(ca, mtls.Identity{Role: mtls.RoleProxy, ID: 3})))

	// Paxos runs between 1 and 2 (a read barrier needs a majority), and
	// its broadcasts go to node 3's address as well.
	admin, _ := dialAdmin(t, cfgs[0].Self().GRPCAddr, DialOptionTo(mtlstest.Load(t, mtls.DirFiles(ca, mtls.Identity{Role: mtls.RoleAdmin})), 1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		_, err := admin.RecoverPoint(ctx, &pb.RecoverPointRequest{NodeId: 9}, grpc.WaitForReady(true))
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("RecoverPoint through nodes 1+2: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The leader's Paxos link to node 3 refused the impostor (a follower
	// may never send node 3 anything): before any Admin call below, the
	// only dials to node 3 are Paxos streams.
	refusal := func() bool {
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, "TLS handshake with a peer failed") && strings.Contains(line, "presented proxy 3, want node 3") {
				return true
			}
		}
		return false
	}
	for !refusal() && calls() == 0 && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	if n := calls(); n != 0 {
		t.Fatalf("%d Paxos calls reached the impostor on node 3's address", n)
	}
	if !refusal() {
		t.Fatalf("no Paxos link refused the impostor; logs:\n%s", logs.String())
	}
	// An Admin call from either node to "node 3" fails at the handshake.
	for _, n := range nodes {
		c3, err := n.peerAdmin(3)
		if err != nil {
			t.Fatal(err)
		}
		sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = c3.Status(sctx, &pb.StatusRequest{})
		scancel()
		if err == nil || !strings.Contains(err.Error(), "presented proxy 3, want node 3") {
			t.Fatalf("node %d -> impostor Admin Status: %v", n.cfg.ID, err)
		}
	}
	if n := calls(); n != 0 {
		t.Fatalf("%d calls reached the impostor on node 3's address", n)
	}
}
