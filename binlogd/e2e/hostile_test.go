package e2e

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"phxgo/binlogd/localcluster"
	"phxgo/paxos"
	pb "phxgo/proto"
)

// TestHostilePaxosPeer is an attack on a real 3-node cluster: a stranger
// dials every node's gRPC port and sends, on the Paxos peer stream, a
// Prepare at round MaxUint64 (a binlogd that promised and persisted it
// would panic, and again at every restart: one packet would brick the
// cluster), and other hostile messages: a Prepare
// at the highest valid round (which would use up the ballot space), an
// Accept at index MaxUint64, a Snapshot there and one whose lease state
// does not decode, senders 0 and 999, and an unknown type. The links run without TLS: this test is about the Paxos
// core, not about who may connect (the mTLS tests are).
//
// Then: no binlogd died or restarted, none promised the forged rounds, each
// logged the drops, a write on the master commits and reaches both
// replicas, and a restarted node comes back healthy and catches up.
func TestHostilePaxosPeer(t *testing.T) {
	c, master := localcluster.StartSpecForTest(t, localcluster.Spec{Nodes: 3, BinDir: binDir,
		LeaseDuration: 3 * time.Second, InsecureNoTLS: true})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	pids := map[uint32]int{}
	for _, id := range c.IDs() {
		if pids[id] = c.Pid(id, "binlogd"); pids[id] == 0 {
			t.Fatalf("node %d: binlogd not running", id)
		}
	}
	for _, id := range c.IDs() {
		attack(ctx, t, c, id)
	}

	db := appDBWith(t, c, master, "CREATE DATABASE hostile", "CREATE TABLE hostile.t (k INT PRIMARY KEY)", "INSERT INTO hostile.t VALUES (1), (2), (3)")
	defer db.Close()
	awaitSameData(t, c, "hostile.t")

	for _, id := range c.IDs() {
		if pid := c.Pid(id, "binlogd"); pid != pids[id] {
			t.Fatalf("node %d: binlogd pid %d, was %d: it died or restarted", id, pid, pids[id])
		}
		if round := scrape(t, c, id)["phxgo_paxos_ballot"]; round >= float64(paxos.MaxRound>>1) {
			t.Fatalf("node %d promised round %g: a forged ballot was adopted", id, round)
		}
		awaitLog(ctx, t, c, id, "dropped hostile or out-of-range peer messages")
		var dropped float64
		for k, v := range scrape(t, c, id) {
			if strings.HasPrefix(k, "phxgo_paxos_dropped_messages_total{") {
				dropped += v
			}
		}
		if dropped == 0 {
			t.Fatalf("node %d: phxgo_paxos_dropped_messages_total counts none of the forged messages", id)
		}
		if log := nodeLog(t, c, id); strings.Contains(log, "panic") {
			t.Fatalf("node %d logged a panic", id)
		}
	}

	// A restarted node (it read back whatever the attack could have
	// persisted) comes back, and the cluster keeps serving writes.
	victim := master%3 + 1
	if err := c.Kill(ctx, victim, "binlogd"); err != nil {
		t.Fatal(err)
	}
	if err := c.StartNode(victim); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitHealthy(ctx, func(s string) { t.Log("waiting:", s) }); err != nil {
		t.Fatalf("after restarting node %d: %v", victim, err)
	}
	mustExec(t, db, "INSERT INTO hostile.t VALUES (4)")
	awaitSameData(t, c, "hostile.t")
}

// attack sends the forged batch to node id's Paxos peer service as a
// stranger (no certificate, claimed senders of its choice).
func attack(ctx context.Context, t *testing.T, c *localcluster.Cluster, id uint32) {
	t.Helper()
	st, err := c.Status(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var addr string
	other := uint32(0) // a member other than id, whose name the forger takes
	for _, m := range st.Members {
		if m.Id == id {
			addr = m.GrpcAddr
		} else if other == 0 {
			other = m.Id
		}
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stream, err := pb.NewPaxosPeerClient(conn).Send(ctx)
	if err != nil {
		t.Fatalf("node %d: open the peer stream: %v", id, err)
	}
	b := func(round uint64, node uint32) *pb.PaxosBallot { return &pb.PaxosBallot{Round: round, Node: node} }
	forged := []*pb.PaxosMessage{
		// The finding: one Prepare at round MaxUint64.
		{Type: 1, From: other, To: id, Ballot: b(math.MaxUint64, other), Index: 1},
		// The highest valid round: adopting it would leave no election.
		{Type: 1, From: other, To: id, Ballot: b(paxos.MaxRound, other), Index: 1},
		// An Accept at the last index, and one far beyond the window.
		{Type: 3, From: other, To: id, Ballot: b(1, other), Entries: []*pb.PaxosEntry{{Index: math.MaxUint64, Ballot: b(1, other)}}},
		{Type: 3, From: other, To: id, Ballot: b(1, other), Entries: []*pb.PaxosEntry{{Index: 1 << 40, Ballot: b(1, other)}}},
		// A snapshot at the last index, and one just ahead whose lease
		// state is garbage (installing it would stop the node, and again
		// at every restart: it is made durable before it is restored).
		{Type: 8, From: other, To: id, Index: math.MaxUint64, Snapshot: []byte("PXS1\x00")},
		{Type: 8, From: other, To: id, Index: 1 << 20, Chosen: 1 << 20, Snapshot: []byte("PXS1\x00garbage")},
		// Bogus senders and an unknown type.
		{Type: 1, From: 0, To: id, Ballot: b(5, 0), Index: 1},
		{Type: 1, From: 999, To: id, Ballot: b(5, 999), Index: 1},
		{Type: 77, From: other, To: id},
	}
	if err := stream.Send(&pb.PaxosBatch{Messages: forged}); err != nil {
		t.Fatalf("node %d: send: %v", id, err)
	}
	if _, err := stream.CloseAndRecv(); err != nil {
		t.Fatalf("node %d: close the peer stream: %v", id, err)
	}
}

func nodeLog(t *testing.T, c *localcluster.Cluster, id uint32) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.Spec.NodeDir(int(id)), "binlogd.log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// awaitLog waits until node id's binlogd.log contains s.
func awaitLog(ctx context.Context, t *testing.T, c *localcluster.Cluster, id uint32, s string) {
	t.Helper()
	for !strings.Contains(nodeLog(t, c, id), s) {
		select {
		case <-ctx.Done():
			t.Fatalf("node %d never logged %q", id, s)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
