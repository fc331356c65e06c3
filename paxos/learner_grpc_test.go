package paxos

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
)

// TestGRPCLearner: real nodes over gRPC and the wal, nodes 1-3 voting and
// node 4 an initial learner (Config.Learners). Writes reach the learner;
// with the learner stopped, and then with one voter stopped, writes go
// on; the learner never leads or campaigns; it is promoted to a voter
// and demoted back, each one change through the log.
func TestGRPCLearner(t *testing.T) {
	c := &testCluster{t: t, peers: map[uint32]string{}, dirs: map[uint32]string{},
		nodes: map[uint32]*Node{}, sms: map[uint32]*lockedSM{}, srvs: map[uint32]*grpc.Server{}}
	lis := map[uint32]net.Listener{}
	for id := uint32(1); id <= 4; id++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lis[id], c.peers[id], c.dirs[id] = l, l.Addr().String(), t.TempDir()
	}
	cfg := func(id uint32) Config {
		cf := testConfig(id, c.peers, c.dirs[id])
		cf.Learners = []uint32{4}
		return cf
	}
	for id, l := range lis {
		c.startWith(id, l, cfg(id))
	}
	t.Cleanup(func() {
		for id := range c.nodes {
			c.stop(id)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	await(t, 10*time.Second, "a leader", func() bool { return c.leader() != 0 })
	if m, _ := c.nodes[1].Membership(); m.Voters() != 3 || !m.IsLearner(4) {
		t.Fatalf("initial members %+v", m.Members)
	}
	write := func(via uint32, n int, tag string) uint64 {
		t.Helper()
		var idx uint64
		for i := 0; i < n; i++ {
			var err error
			if idx, err = propose(ctx, c.nodes[via], fmt.Sprintf("%s-%d", tag, i)); err != nil {
				t.Fatalf("write %s-%d via %d: %v", tag, i, via, err)
			}
		}
		return idx
	}
	// Writes through the learner too (it forwards to the leader).
	idx := write(4, 20, "a")
	write(1, 20, "b")
	if err := c.nodes[4].WaitApplied(ctx, idx); err != nil {
		t.Fatal(err)
	}
	if err := c.nodes[4].Campaign(ctx); !errors.Is(err, ErrNotVoter) {
		t.Fatalf("learner Campaign: %v, want ErrNotVoter", err)
	}

	// The learner down: writes go on, and it catches up on restart.
	c.stop(4)
	idx = write(1, 20, "c")
	c.startWith(4, nil, cfg(4))
	if err := c.nodes[4].WaitApplied(ctx, idx); err != nil {
		t.Fatal(err)
	}

	// A voter down (not the leader): 2 of 3 voters still choose.
	lead := c.leader()
	down := lead%3 + 1
	c.stop(down)
	idx = write(lead, 20, "d")
	if err := c.nodes[4].WaitApplied(ctx, idx); err != nil {
		t.Fatal(err)
	}
	if c.nodes[4].IsLeader() {
		t.Fatal("the learner leads")
	}
	c.startWith(down, nil, cfg(down))

	// Promote: four voters, the learner counts now.
	pctx, pcancel := context.WithTimeout(ctx, 15*time.Second)
	m, err := c.nodes[lead].PromoteLearner(pctx, 4)
	pcancel()
	if err != nil {
		for id, n := range c.nodes {
			mm, pend := n.Membership()
			t.Logf("node %d: %+v members %+v pending %v", id, n.Status(), mm, pend)
		}
		t.Fatal(err)
	}
	if m.Voters() != 4 || !m.IsVoter(4) {
		t.Fatalf("after promote: %+v", m.Members)
	}
	if _, err := c.nodes[lead].PromoteLearner(ctx, 4); !errors.Is(err, ErrBadMembership) {
		t.Fatalf("promoting a voter: %v", err)
	}
	write(4, 10, "e")
	// Demote back.
	m, err = c.nodes[lead].DemoteVoter(ctx, 4)
	if err != nil {
		t.Fatal(err)
	}
	if m.Voters() != 3 || !m.IsLearner(4) {
		t.Fatalf("after demote: %+v", m.Members)
	}
	idx = write(1, 10, "f")
	if err := c.nodes[4].WaitApplied(ctx, idx); err != nil {
		t.Fatal(err)
	}
	if got, want := len(c.sms[4].copyList()), len(c.sms[1].copyList()); got < want {
		t.Fatalf("learner applied %d commands, node 1 %d", got, want)
	}
}
