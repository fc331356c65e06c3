package paxos

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// Node.Campaign through the real driver on the seeded in-memory network
// (node_seeded_test.go): a follower of 5 or 7 hears only the leader, yet
// its campaign must succeed; a node cut off from the majority must get
// ErrNoQuorum, whether it was cut just before the call or long before.

func newSeededCluster(t *testing.T, seed int64, n int) *seededCluster {
	c := &seededCluster{t: t, seed: seed, peers: map[uint32]string{}, dirs: map[uint32]string{},
		nodes: map[uint32]*Node{}, sms: map[uint32]*lockedSM{}, inc: map[uint32]int64{}}
	for id := uint32(1); id <= uint32(n); id++ {
		c.ids = append(c.ids, id)
		c.peers[id] = fmt.Sprintf("mem-%d", id)
		c.dirs[id] = t.TempDir()
	}
	c.net = newMemNet(seed, c.ids...)
	for _, id := range c.ids {
		c.start(id)
	}
	t.Cleanup(func() {
		for _, id := range c.ids {
			c.node(id).Stop()
		}
		c.net.close()
	})
	return c
}

// isolate cuts the nodes of side off from the rest, both ways.
func (c *seededCluster) isolate(side ...uint32) {
	in := map[uint32]bool{}
	for _, id := range side {
		in[id] = true
	}
	cut := map[[2]uint32]bool{}
	for _, a := range c.ids {
		for _, b := range c.ids {
			if in[a] != in[b] {
				cut[[2]uint32{a, b}] = true
			}
		}
	}
	c.net.setCut(cut)
}

// followers returns the nodes that do not lead, in id order.
func (c *seededCluster) followers(l uint32) []uint32 {
	var fs []uint32
	for _, id := range c.ids {
		if id != l {
			fs = append(fs, id)
		}
	}
	return fs
}

func settledLeader(t *testing.T, c *seededCluster, ctx context.Context) uint32 {
	t.Helper()
	await(t, 20*time.Second, "a leader", func() bool { return c.leader() != 0 })
	l := c.leader()
	// A chosen command: every follower has heard this leader.
	if _, err := propose(ctx, c.node(l), "before"); err != nil {
		t.Fatal(err)
	}
	// Not an assertion: the election's probes and Prepares, which every
	// node heard from every other, age out of the 2E window, so a
	// follower has heard only the leader lately, as in a long-running
	// cluster (2E is 400ms here; 5 windows leave room for missed ticks).
	time.Sleep(10 * c.node(l).cfg.ElectionTimeout)
	if c.leader() != l {
		t.Fatalf("leader moved from %d while idle", l)
	}
	return l
}

func TestCampaignFollowerOfMany(t *testing.T) {
	for _, n := range []int{5, 7} {
		t.Run(fmt.Sprint(n, "nodes"), func(t *testing.T) {
			c := newSeededCluster(t, int64(n), n)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			old := settledLeader(t, c, ctx)
			// Two moves: to a follower, then to another one, each by a
			// node that had heard only the leader.
			for _, target := range c.followers(old)[:2] {
				if err := c.node(target).Campaign(ctx); err != nil {
					t.Fatalf("follower %d of %d: Campaign: %v", target, n, err)
				}
				if !c.node(target).IsLeader() {
					t.Fatalf("node %d does not lead right after its Campaign", target)
				}
				if _, err := propose(ctx, c.node(target), fmt.Sprint("after-", target)); err != nil {
					t.Fatal(err)
				}
				if l := c.leader(); l != target {
					t.Fatalf("node %d leads after node %d's campaign", l, target)
				}
			}
		})
	}
}

func TestCampaignMinorityNoQuorum(t *testing.T) {
	c := newSeededCluster(t, 11, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l := settledLeader(t, c, ctx)
	fs := c.followers(l)
	a, b := fs[0], fs[1]

	// Just cut: a still believes in the leader, so its campaign starts
	// (raising its ballot) and hears only b (2 of 5) for 2E ticks.
	c.isolate(a, b)
	if err := c.node(a).Campaign(ctx); !errors.Is(err, ErrNoQuorum) {
		t.Fatalf("minority node's Campaign just after the cut: %v, want ErrNoQuorum", err)
	}
	if c.node(a).IsLeader() {
		t.Fatal("minority node leads")
	}
	// Long cut: nothing from a majority for 2E, no leader: refused at
	// the call.
	await(t, 20*time.Second, "a leader among the majority", func() bool {
		l := c.leader()
		return l != 0 && l != a && l != b
	})
	await(t, 20*time.Second, "the minority to forget the leader", func() bool {
		st := c.node(a).Status()
		return st.Leader == 0 || st.Leader == a || st.Leader == b
	})
	if err := c.node(a).Campaign(ctx); !errors.Is(err, ErrNoQuorum) {
		t.Fatalf("minority node's Campaign long after the cut: %v, want ErrNoQuorum", err)
	}

	// Healed: the same node's campaign succeeds.
	c.net.setCut(map[[2]uint32]bool{})
	// (a's raised ballot may have made it win the election that follows:
	// Campaign's documented cost after an error.)
	await(t, 20*time.Second, "the minority to rejoin", func() bool { return c.node(a).Status().Leader != 0 })
	if err := c.node(a).Campaign(ctx); err != nil {
		t.Fatalf("healed node's Campaign: %v", err)
	}
}
