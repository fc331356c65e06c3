package paxos

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc"

	"phxgo/jepsen/netns"
)

// TestHealedPartitionReconnectsSoon: a node cut off from its peers by
// dropped packets (iptables in a private namespace, as Jepsen does) is
// back in the cluster soon after the links heal, however long the cut:
// a stream on a connection that lost packets must not wait out TCP's
// retransmission backoff or gRPC's reconnect backoff.
func TestHealedPartitionReconnectsSoon(t *testing.T) {
	if err := netns.Supported(); err != nil {
		t.Skipf("no network namespaces here: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := netns.EnsureIPTables(ctx); err != nil {
		t.Skipf("no iptables: %v", err)
	}
	ns, err := netns.Create(ctx, fmt.Sprintf("phxpaxos%d", os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()

	ip := func(id uint32) string { return fmt.Sprintf("127.0.0.%d", id+1) }
	peers := map[uint32]string{}
	for id := uint32(1); id <= 3; id++ {
		peers[id] = net.JoinHostPort(ip(id), "7001")
	}
	nodes := map[uint32]*Node{}
	for id := uint32(1); id <= 3; id++ {
		l, err := ns.Listen("tcp", peers[id])
		if err != nil {
			t.Fatal(err)
		}
		cfg := testConfig(id, peers, "")
		dial := func(ctx context.Context, addr string) (net.Conn, error) { return ns.DialFrom(ctx, ip(id), "tcp", addr) }
		n, err := Start(cfg, &listSM{}, WithStorage(NewMemoryStorage()), WithDialOptions(grpc.WithContextDialer(dial)))
		if err != nil {
			t.Fatal(err)
		}
		s := grpc.NewServer(GRPCServerOptions(cfg)...)
		n.RegisterGRPC(s)
		go s.Serve(l)
		defer func() { s.Stop(); n.Stop() }()
		nodes[id] = n
	}
	for id, n := range nodes {
		if _, err := n.Barrier(ctx); err != nil && !errors.Is(err, ErrNoQuorum) {
			t.Fatalf("node %d: %v", id, err)
		}
	}
	await(t, 30*time.Second, "a barrier on node 3", func() bool { _, err := nodes[3].Barrier(ctx); return err == nil })

	// Cut node 3 off for 20 s while the other two keep committing (a
	// little: node 3 has it to catch up), so every stream to or from it
	// has unacknowledged data in flight.
	if err := ns.CutLinks(ctx, []netns.Link{{ip(3), ip(1)}, {ip(3), ip(2)}}); err != nil {
		t.Fatal(err)
	}
	cut := time.Now()
	for time.Since(cut) < 20*time.Second {
		for _, id := range []uint32{1, 2} {
			pctx, pcancel := context.WithTimeout(ctx, 100*time.Millisecond)
			nodes[id].Propose(pctx, []byte("during the cut"))
			<-pctx.Done()
			pcancel()
		}
	}
	if err := ns.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	// A dead link is closed LinkTimeout after it stops acknowledging, and
	// a redial takes at most a connect timeout (LinkTimeout) after a
	// backoff (maxBackoff); before, this took 7.7-7.9 s here, and 40 s
	// after two cuts in a row in Jepsen.
	healed := time.Now()
	bound := 2*LinkTimeout(testConfig(3, peers, "")) + 2*maxBackoff + time.Second
	for {
		bctx, bcancel := context.WithTimeout(ctx, 500*time.Millisecond)
		_, err := nodes[3].Barrier(bctx)
		bcancel()
		if err == nil {
			break
		}
		if time.Since(healed) > bound {
			t.Fatalf("node 3 still cut off %v after the heal: %v", bound, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("node 3 back %v after the heal", time.Since(healed).Round(time.Millisecond))
}
