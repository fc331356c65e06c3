package paxos

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	pb "phxgo/proto"
	"phxgo/wal"
)

// A whole node under one seed: Start's seed and transport options make a
// Node whose randomness all comes from the test's seed (the core's
// election timeouts and campaign backoffs, the network's loss,
// duplication and reordering), over its real driver, pipeline and wal.
// Goroutine scheduling and the wall-clock ticker are not seeded, so a
// seed replays the same faults, not the same interleaving.

func withSeed(seed int64) Option { return func(o *options) { o.seed = seed } }

func withTransport(f func(*Node) transport) Option { return func(o *options) { o.transport = f } }

// memNet is a seeded in-memory network between Nodes of one process.
// Every message is encoded and decoded as gRPC would (so no slice is
// shared between nodes); each destination has an inbox drained by its own
// goroutine, so send never blocks, as transport requires.
type memNet struct {
	mu      sync.Mutex
	rng     *rand.Rand
	drop    float64
	dup     float64
	reorder float64
	cut     map[[2]uint32]bool
	inboxes map[uint32]*memInbox
	sent    atomic.Uint64
}

type memInbox struct {
	mu     sync.Mutex
	wake   chan struct{} // buffered 1
	q      []Message
	node   atomic.Pointer[Node]
	closed bool
}

func newMemNet(seed int64, ids ...uint32) *memNet {
	n := &memNet{rng: rand.New(rand.NewSource(seed)), cut: map[[2]uint32]bool{}, inboxes: map[uint32]*memInbox{}}
	for _, id := range ids {
		in := &memInbox{wake: make(chan struct{}, 1)}
		n.inboxes[id] = in
		go in.run()
	}
	return n
}

// link is the transport option for node id: attach sets the node that
// receives id's messages (a restarted node replaces the stopped one).
func (n *memNet) link(id uint32) func(*Node) transport {
	return func(nd *Node) transport {
		n.inboxes[id].node.Store(nd)
		return memLink{n, id}
	}
}

func (n *memNet) setCut(cut map[[2]uint32]bool) {
	n.mu.Lock()
	n.cut = cut
	n.mu.Unlock()
}

func (n *memNet) close() {
	for _, in := range n.inboxes {
		in.mu.Lock()
		in.closed = true
		in.mu.Unlock()
		in.poke()
	}
}

type memLink struct {
	net  *memNet
	from uint32
}

func (l memLink) setPeers(map[uint32]string) {}
func (l memLink) close()                     {}

func (l memLink) send(ms []Message) {
	n := l.net
	for i := range ms {
		m := wire(&ms[i])
		n.mu.Lock()
		in := n.inboxes[m.To]
		if in == nil || n.cut[[2]uint32{l.from, m.To}] || n.rng.Float64() < n.drop {
			n.mu.Unlock()
			continue
		}
		copies := 1
		if n.rng.Float64() < n.dup {
			copies = 2
		}
		swap := n.rng.Float64() < n.reorder
		n.mu.Unlock()
		n.sent.Add(1)
		in.mu.Lock()
		for range copies {
			in.q = append(in.q, m)
		}
		if k := len(in.q); swap && k > 1 {
			in.q[k-1], in.q[k-2] = in.q[k-2], in.q[k-1]
		}
		in.mu.Unlock()
		in.poke()
	}
}

// wire is m after a trip through the gRPC codec.
func wire(m *Message) Message {
	b, err := proto.Marshal(messageToProto(m))
	if err != nil {
		panic(err)
	}
	var p pb.PaxosMessage
	if err := proto.Unmarshal(b, &p); err != nil {
		panic(err)
	}
	out, ok := messageFromProto(&p)
	if !ok {
		panic(fmt.Sprintf("codec refused %v", m))
	}
	return out
}

func (in *memInbox) poke() {
	select {
	case in.wake <- struct{}{}:
	default:
	}
}

func (in *memInbox) run() {
	for range in.wake {
		in.mu.Lock()
		q, closed := in.q, in.closed
		in.q = nil
		in.mu.Unlock()
		if closed {
			return
		}
		if nd := in.node.Load(); nd != nil && len(q) > 0 {
			nd.deliver(q) // ErrStopped: lost, as on a closed stream
		}
	}
}

type seededCluster struct {
	t     *testing.T
	seed  int64
	net   *memNet
	ids   []uint32
	peers map[uint32]string
	dirs  map[uint32]string
	mu    sync.Mutex
	nodes map[uint32]*Node
	sms   map[uint32]*lockedSM
	inc   map[uint32]int64
}

func (c *seededCluster) start(id uint32) {
	c.t.Helper()
	cfg := testConfig(id, c.peers, c.dirs[id])
	// The fake disk: the real wal in a temporary directory, without
	// fsync (wal has no filesystem seam; lossy_storage_test.go models
	// what a crash loses instead).
	w, err := wal.Open(cfg.Dir, wal.Options{NoSync: true, MinFreeBytes: -1})
	if err != nil {
		c.t.Fatal(err)
	}
	c.inc[id]++
	sm := &lockedSM{}
	n, err := Start(cfg, sm, WithStorage(w), withSeed(c.seed*1000+int64(id)*100+c.inc[id]), withTransport(c.net.link(id)))
	if err != nil {
		c.t.Fatal(err)
	}
	c.mu.Lock()
	c.nodes[id], c.sms[id] = n, sm
	c.mu.Unlock()
}

func (c *seededCluster) node(id uint32) *Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[id]
}

func (c *seededCluster) leader() uint32 {
	for _, id := range c.ids {
		if c.node(id).IsLeader() {
			return id
		}
	}
	return 0
}

// TestNodeSeeded runs three whole nodes over a seeded lossy network:
// clients propose through random nodes while the leader is cut off and a
// follower restarts on its wal; after healing, every node applies the
// same commands, each successful one exactly once. Replay a seed with
// -seed=N.
func TestNodeSeeded(t *testing.T) {
	seeds := []int64{1, 2}
	if *flagSeed >= 0 {
		seeds = []int64{*flagSeed}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { runNodeSeeded(t, seed) })
	}
}

func runNodeSeeded(t *testing.T, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	c := &seededCluster{t: t, seed: seed, ids: []uint32{1, 2, 3}, peers: map[uint32]string{}, dirs: map[uint32]string{},
		nodes: map[uint32]*Node{}, sms: map[uint32]*lockedSM{}, inc: map[uint32]int64{}}
	c.net = newMemNet(rng.Int63(), c.ids...)
	c.net.drop, c.net.dup, c.net.reorder = 0.05, 0.02, 0.05
	for _, id := range c.ids {
		c.peers[id] = fmt.Sprintf("mem-%d", id)
		c.dirs[id] = t.TempDir()
	}
	for _, id := range c.ids {
		c.start(id)
	}
	defer func() {
		for _, id := range c.ids {
			c.node(id).Stop()
		}
		c.net.close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	await(t, 20*time.Second, "a leader", func() bool { return c.leader() != 0 })

	// Clients: each proposes through a node the seed picks per command.
	const clients, perClient = 4, 25
	var ok sync.Map // commands whose Propose returned nil
	var wg sync.WaitGroup
	var done atomic.Int64
	targets := make([][]uint32, clients)
	for w := range targets {
		for range perClient {
			targets[w] = append(targets[w], c.ids[rng.Intn(len(c.ids))])
		}
	}
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, id := range targets[w] {
				cmd := fmt.Sprintf("s%d-w%d-%d", seed, w, i)
				// An unknown outcome (timeout, stopped node) is proposed
				// again: a new command to the log (a new seq), so it may
				// be applied twice, and is on every node alike.
				for ctx.Err() == nil {
					pctx, pcancel := context.WithTimeout(ctx, time.Second)
					_, err := propose(pctx, c.node(id), cmd)
					pcancel()
					if err == nil {
						ok.Store(cmd, true)
						break
					}
				}
				done.Add(1)
			}
		}()
	}

	// Faults at points the clients' progress decides.
	await(t, 30*time.Second, "progress before the partition", func() bool { return done.Load() >= clients*perClient/4 })
	old := c.leader()
	cut := map[[2]uint32]bool{}
	for _, id := range c.ids {
		if id != old && old != 0 {
			cut[[2]uint32{old, id}], cut[[2]uint32{id, old}] = true, true
		}
	}
	c.net.setCut(cut)
	await(t, 20*time.Second, "a new leader among the majority", func() bool {
		l := c.leader()
		return l != 0 && l != old
	})
	c.net.setCut(map[[2]uint32]bool{})
	var f uint32
	for _, id := range c.ids {
		if id != c.leader() {
			f = id
			break
		}
	}
	c.node(f).Stop()
	c.start(f)
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("seed %d: clients did not finish: %v", seed, ctx.Err())
	}

	// Converge: a barrier through each node, then equal logs.
	for _, id := range c.ids {
		bctx, bcancel := context.WithTimeout(ctx, 20*time.Second)
		for {
			if _, err := c.node(id).Barrier(bctx); err == nil || bctx.Err() != nil {
				break
			}
		}
		bcancel()
	}
	var want uint64
	for _, id := range c.ids {
		want = max(want, c.node(id).Applied())
	}
	for _, id := range c.ids {
		if err := c.node(id).WaitApplied(ctx, want); err != nil {
			t.Fatalf("seed %d: node %d at %d, want %d: %v", seed, id, c.node(id).Applied(), want, err)
		}
	}
	logs := map[uint32][][]byte{}
	for _, id := range c.ids {
		logs[id] = c.sms[id].copyList()
	}
	for _, id := range c.ids[1:] {
		if !slices.EqualFunc(logs[id], logs[c.ids[0]], func(a, b []byte) bool { return string(a) == string(b) }) {
			t.Fatalf("seed %d: node %d applied %d commands, node %d %d, or they differ", seed, id, len(logs[id]), c.ids[0], len(logs[c.ids[0]]))
		}
	}
	in := map[string]int{}
	for _, cmd := range logs[c.ids[0]] {
		in[string(cmd)]++
	}
	ok.Range(func(k, _ any) bool {
		if in[k.(string)] == 0 {
			t.Errorf("seed %d: %q succeeded but is not applied", seed, k)
		}
		return true
	})
	if c.net.sent.Load() == 0 {
		t.Fatal("nothing went through the seeded network")
	}
}
