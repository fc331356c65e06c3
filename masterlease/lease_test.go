package masterlease

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// fakeClock is a manually advanced clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// syncLog is a fake total-order log: Propose appends and applies the
// command on every attached, connected node at once.
type syncLog struct {
	mu      sync.Mutex
	entries [][]byte
	nodes   []*Lease
	applied map[*Lease]int
	cut     map[uint32]bool // disconnected: cannot propose, does not learn
}

type nodeLog struct {
	s  *syncLog
	id uint32
}

var errCut = errors.New("disconnected")

func (n nodeLog) Propose(ctx context.Context, cmd []byte) (uint64, any, error) {
	s := n.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cut[n.id] {
		return 0, nil, errCut
	}
	s.entries = append(s.entries, cmd)
	idx := uint64(len(s.entries))
	var res any
	for _, l := range s.nodes {
		r := s.catchUpLocked(l)
		if l.ID() == n.id {
			res = r
		}
	}
	return idx, res, nil
}

func (n nodeLog) Barrier(ctx context.Context) (uint64, error) {
	n.s.mu.Lock()
	defer n.s.mu.Unlock()
	return uint64(len(n.s.entries)), nil
}

func (s *syncLog) catchUpLocked(l *Lease) any {
	var last any
	if s.cut[l.ID()] {
		return nil
	}
	for s.applied[l] < len(s.entries) {
		s.applied[l]++
		last = l.Apply(uint64(s.applied[l]), s.entries[s.applied[l]-1])
	}
	return last
}

func (s *syncLog) setCut(id uint32, cut bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cut[id] = cut
	for _, l := range s.nodes {
		s.catchUpLocked(l)
	}
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// cluster builds n Leases sharing one fake clock and one syncLog.
func cluster(t *testing.T, cfg Config, n int) (*syncLog, *fakeClock, []*Lease) {
	t.Helper()
	clk := &fakeClock{t: time.Unix(1000, 0)}
	s := &syncLog{applied: map[*Lease]int{}, cut: map[uint32]bool{}}
	var ls []*Lease
	for i := 1; i <= n; i++ {
		l, err := New(cfg, uint32(i), clk, quiet)
		if err != nil {
			t.Fatal(err)
		}
		l.Attach(nodeLog{s: s, id: uint32(i)})
		s.nodes = append(s.nodes, l)
		ls = append(ls, l)
	}
	return s, clk, ls
}

// step runs one election-loop round of l (what Run does every tick).
func step(l *Lease, can func() bool) bool {
	cmd, ok := l.nextProposal(can)
	if ok {
		l.proposeElection(context.Background(), cmd)
	}
	return ok
}

func TestAcquireRenewAndReady(t *testing.T) {
	cfg := DefaultConfig()
	_, clk, ls := cluster(t, cfg, 3)
	a, b := ls[0], ls[1]
	w, cancel := a.Watch()
	defer cancel()
	if s := <-w; s.Role != RoleReplica {
		t.Fatalf("initial %+v", s)
	}
	// canAcquire false: no proposal.
	if step(a, func() bool { return false }) {
		t.Fatal("proposed although canAcquire is false")
	}
	start := clk.Now()
	if !step(a, nil) {
		t.Fatal("no proposal on a fresh log")
	}
	if got, want := a.Deadline(), start.Add(cfg.LeaseDuration-cfg.DriftMargin); !got.Equal(want) {
		t.Fatalf("deadline %v, want %v", got, want)
	}
	if m, v, e := b.Master(); m != 1 || v != 1 || e != 1 {
		t.Fatalf("b sees master %d v%d e%d", m, v, e)
	}
	// Nothing valid before the first term: ready at once.
	if s := <-w; s.Role != RoleMaster || !a.Ready() || s.CatchUpIndex != 0 {
		t.Fatalf("after grant %+v", s)
	}
	if v, err := a.ProposeBatch(context.Background(), Batch{Epoch: 1, Last: g(1), Events: []byte("e"), TxnCount: 1}); err != nil || !v.Valid {
		t.Fatalf("batch %+v %v", v, err)
	}
	// b must not compete while the lease runs in its view.
	clk.Advance(cfg.LeaseDuration - time.Millisecond)
	if step(b, nil) {
		t.Fatal("b proposed before its view expired")
	}
	clk.Advance(-cfg.LeaseDuration + time.Millisecond)
	// Renewal at d/3 after start, not before.
	clk.Advance(cfg.RenewInterval - time.Millisecond)
	if step(a, nil) {
		t.Fatal("renewed early")
	}
	clk.Advance(time.Millisecond)
	renewAt := clk.Now()
	if !step(a, nil) {
		t.Fatal("did not renew")
	}
	if _, _, e := a.Master(); e != 1 || !a.Deadline().Equal(renewAt.Add(cfg.LeaseDuration-cfg.DriftMargin)) {
		t.Fatalf("renewal: epoch %d deadline %v", e, a.Deadline())
	}
	// The follower's view counts from the renewal it applied.
	clk.Advance(cfg.LeaseDuration - time.Millisecond)
	if step(b, nil) {
		t.Fatal("b proposed before apply+d")
	}
	clk.Advance(time.Millisecond)
	if a.Deadline() != (time.Time{}) {
		t.Fatal("a's deadline outlived its follower's view")
	}
	if !step(b, nil) || b.Deadline().IsZero() {
		t.Fatal("b did not take over")
	}
	if m, _, e := a.Master(); m != 2 || e != 2 || a.Status().Role != RoleReplica {
		t.Fatalf("a sees master %d epoch %d", m, e)
	}
	if s := <-w; s.Role != RoleReplica || s.State.Master != 2 {
		t.Fatalf("a's watch: %+v", s)
	}
	// b must apply the batch at index 2 to its MariaDB before serving.
	if s := b.Status(); s.Role != RoleCandidate || s.CatchUpIndex != 2 || b.Ready() {
		t.Fatalf("b before catch-up %+v", s)
	}
	b.MarkCaughtUp(1)
	if b.Ready() {
		t.Fatal("ready before the last valid batch was applied")
	}
	b.MarkCaughtUp(2)
	if !b.Ready() {
		t.Fatal("not ready after catch-up")
	}
}

func TestLapsedHolderMustWinNewTerm(t *testing.T) {
	cfg := DefaultConfig()
	s, clk, ls := cluster(t, cfg, 3)
	a := ls[0]
	step(a, nil)
	// a's renewal is delayed: a proposes it, is cut off, and the entry is
	// chosen only after a's own deadline passed.
	clk.Advance(cfg.RenewInterval)
	cmd, ok := a.nextProposal(nil)
	if !ok {
		t.Fatal("no renewal")
	}
	clk.Advance(cfg.LeaseDuration)
	if !a.Deadline().IsZero() {
		t.Fatal("deadline still valid")
	}
	if _, res, _ := (nodeLog{s: s, id: 1}).Propose(context.Background(), cmd); !res.(Verdict).Valid {
		t.Fatalf("renewal rejected: %+v", res)
	}
	if !a.Deadline().IsZero() {
		t.Fatal("a renewal after a lapse gave a deadline")
	}
	// The next round asks for a new term, not a renewal.
	clk.Advance(cfg.RetryInterval)
	cmd, ok = a.nextProposal(nil)
	e, _ := Decode(cmd)
	if !ok || e.Lease.Renew {
		t.Fatalf("want a new-term request, got %+v", e)
	}
}

func TestSwitchoverAndFence(t *testing.T) {
	cfg := DefaultConfig()
	_, clk, ls := cluster(t, cfg, 3)
	a, b, c := ls[0], ls[1], ls[2]
	step(a, nil)
	ctx := context.Background()
	if _, err := b.Switchover(ctx, 3); !errors.Is(err, ErrNotMaster) {
		t.Fatalf("switchover by non-master: %v", err)
	}
	v, err := a.Switchover(ctx, 2)
	if err != nil || !v.Valid || v.State.Master != 2 {
		t.Fatalf("switchover: %+v %v", v, err)
	}
	if !a.Deadline().IsZero() || !b.Deadline().IsZero() {
		t.Fatal("a grant not proposed by b gave b a deadline, or a kept its own")
	}
	if step(c, nil) {
		t.Fatal("c competed with the new master")
	}
	if !step(b, nil) || b.Deadline().IsZero() {
		t.Fatal("b did not win its own term")
	}
	if _, _, e := c.Master(); e != 3 {
		t.Fatalf("epoch %d, want 3 (grant + b's own term)", e)
	}
	clk.Advance(cfg.RetryInterval)
	if step(a, nil) {
		t.Fatal("a did not stand down")
	}
	// b fences itself: no master, others may elect at once.
	if _, err := c.Fence(ctx); !errors.Is(err, ErrNotMaster) {
		t.Fatalf("fence by non-master: %v", err)
	}
	if v, err := b.Fence(ctx); err != nil || !v.Valid || v.State.Master != 0 {
		t.Fatalf("fence: %+v %v", v, err)
	}
	if v, err := c.FenceEpoch(ctx, 3); err != nil || v.Reason != ReasonStaleEpoch {
		t.Fatalf("second fence: %+v %v", v, err)
	}
	if !step(c, nil) || c.Deadline().IsZero() {
		t.Fatal("c could not elect after a self-fence")
	}
	// A fence by a third party (recovery) leaves the others waiting out
	// the old lease: c might still be serving.
	if v, err := a.FenceEpoch(ctx, 5); err != nil || !v.Valid {
		t.Fatalf("third-party fence: %+v %v", v, err)
	}
	if step(b, nil) {
		t.Fatal("b elected while c's lease could still run")
	}
	clk.Advance(cfg.LeaseDuration)
	if !step(b, nil) {
		t.Fatal("b did not elect after the old lease ran out")
	}
}

func TestProposeBatch(t *testing.T) {
	cfg := DefaultConfig()
	_, clk, ls := cluster(t, cfg, 3)
	a, b := ls[0], ls[1]
	ctx := context.Background()
	step(a, nil)
	good := Batch{Epoch: 1, Last: g(1), Events: []byte("e"), TxnCount: 1}
	if _, err := b.ProposeBatch(ctx, good); !errors.Is(err, ErrNotMaster) {
		t.Fatalf("non-master: %v", err)
	}
	stale := good
	stale.Epoch = 0
	if _, err := a.ProposeBatch(ctx, stale); !errors.Is(err, ErrNotMaster) {
		t.Fatalf("wrong epoch: %v", err)
	}
	v, err := a.ProposeBatch(ctx, good)
	if err != nil || !v.Valid {
		t.Fatalf("%+v %v", v, err)
	}
	if last, idx := b.Position(); last != g(1) || idx != 2 {
		t.Fatalf("b position %v %d", last, idx)
	}
	v, err = a.ProposeBatch(ctx, good) // duplicate
	if err != nil || v.Reason != ReasonChain || v.Expected != g(1) || v.Got != (GTID{}) {
		t.Fatalf("duplicate: %+v %v", v, err)
	}
	clk.Advance(cfg.LeaseDuration)
	if _, err := a.ProposeBatch(ctx, good); !errors.Is(err, ErrNotMaster) {
		t.Fatalf("expired: %v", err)
	}
	if st, err := b.Sync(ctx); err != nil || st.State.Applied != 3 {
		t.Fatalf("sync %+v %v", st, err)
	}
}

func TestRestoreHoldsNoLease(t *testing.T) {
	cfg := DefaultConfig()
	_, clk, ls := cluster(t, cfg, 2)
	a := ls[0]
	step(a, nil)
	a.MarkCaughtUp(1)
	snap, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	r, _ := New(cfg, 1, clk, quiet)
	if err := r.Restore(1, snap); err != nil {
		t.Fatal(err)
	}
	if r.State() != a.State() || !r.Deadline().IsZero() {
		t.Fatalf("restored %v deadline %v", r.State(), r.Deadline())
	}
	// It is the master in the state without a deadline: it asks for a new term.
	cmd, ok := r.nextProposal(nil)
	e, _ := Decode(cmd)
	if !ok || e.Lease.Renew || e.Lease.SeenVersion != 1 {
		t.Fatalf("restarted master proposes %+v", e)
	}
	// A restarted follower waits a whole lease from the restart.
	f, _ := New(cfg, 2, clk, quiet)
	if err := f.Restore(1, snap); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.nextProposal(nil); ok {
		t.Fatal("restarted follower proposed at once")
	}
	clk.Advance(cfg.LeaseDuration)
	if _, ok := f.nextProposal(nil); !ok {
		t.Fatal("restarted follower never proposes")
	}
	if err := f.Restore(0, []byte{0xff}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("garbage snapshot: %v", err)
	}
}

// TestRun runs three election loops over the fake log on the real clock:
// one master emerges and renews; when it is cut off another takes over.
func TestRun(t *testing.T) {
	cfg := Config{LeaseDuration: 300 * time.Millisecond, DriftMargin: 30 * time.Millisecond,
		RenewInterval: 100 * time.Millisecond, RetryInterval: 10 * time.Millisecond}
	s := &syncLog{applied: map[*Lease]int{}, cut: map[uint32]bool{}}
	var ls []*Lease
	for i := 1; i <= 3; i++ {
		l, err := New(cfg, uint32(i), SystemClock{}, quiet)
		if err != nil {
			t.Fatal(err)
		}
		l.Attach(nodeLog{s: s, id: uint32(i)})
		s.nodes = append(s.nodes, l)
		ls = append(ls, l)
		l.MarkCaughtUp(1 << 40)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, l := range ls {
		wg.Add(1)
		go func() { defer wg.Done(); _ = l.Run(ctx, nil) }()
	}
	defer func() { cancel(); wg.Wait() }()
	holder := func() *Lease {
		// (Exclusivity is checked exactly by TestSimLease; on the real
		// clock reading two nodes is not one instant.)
		for _, l := range ls {
			if l.Ready() {
				return l
			}
		}
		return nil
	}
	await := func(what string, cond func() bool) {
		t.Helper()
		for end := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	var first *Lease
	await("a master", func() bool { first = holder(); return first != nil })
	_, v0, e0 := first.Master()
	await("renewals", func() bool { _, v, _ := first.Master(); return v >= v0+3 })
	if _, _, e := first.Master(); e != e0 || holder() != first {
		t.Fatalf("renewals changed the term")
	}
	s.setCut(first.ID(), true)
	await("failover", func() bool { h := holder(); return h != nil && h != first })
	if !first.Deadline().IsZero() {
		t.Fatal("cut-off master still holds a deadline")
	}
	s.setCut(first.ID(), false)
	await("old master learns", func() bool { m, _, _ := first.Master(); return m != first.ID() && m != 0 })
}

// overtakingLog chooses the queued commands ahead of the next command
// proposed through it, the way a renewal queued in Paxos before the
// master stepped down is chosen ahead of its switchover grant.
type overtakingLog struct {
	nodeLog
	queued [][]byte
}

func (o *overtakingLog) Propose(ctx context.Context, cmd []byte) (uint64, any, error) {
	for _, q := range o.queued {
		if _, _, err := o.nodeLog.Propose(ctx, q); err != nil {
			return 0, nil, err
		}
	}
	o.queued = nil
	return o.nodeLog.Propose(ctx, cmd)
}

// A renewal of the master's own chosen ahead of its switchover grant
// changes the lease version the grant saw; the switchover goes through
// on the new version (it failed with "lease version changed" in
// TestFailover/SwitchoverEvents), and the renewal does not give the
// stepped-down master its deadline back.
func TestSwitchoverOvertakenByOwnRenewal(t *testing.T) {
	cfg := DefaultConfig()
	s, clk, ls := cluster(t, cfg, 3)
	a := ls[0]
	step(a, nil)
	clk.Advance(cfg.RenewInterval)
	renewal, ok := a.nextProposal(nil)
	if e, _ := Decode(renewal); !ok || !e.Lease.Renew {
		t.Fatalf("want a renewal, got %+v", e)
	}
	a.Attach(&overtakingLog{nodeLog: nodeLog{s: s, id: 1}, queued: [][]byte{renewal}})
	v, err := a.Switchover(context.Background(), 2)
	if err != nil || !v.Valid || v.State.Master != 2 {
		t.Fatalf("switchover: %+v %v", v, err)
	}
	if n := len(s.entries); n != 4 {
		t.Fatalf("%d entries, want 4: term, renewal, rejected grant, grant", n)
	}
	if !a.Deadline().IsZero() {
		t.Fatal("the renewal chosen after the step-down gave the old master its deadline back")
	}
}

// A new term chosen ahead of the grant ends the switchover: only the old
// master's own renewals are worth proposing the grant again for.
func TestSwitchoverOvertakenByNewTerm(t *testing.T) {
	cfg := DefaultConfig()
	s, _, ls := cluster(t, cfg, 3)
	a := ls[0]
	step(a, nil)
	a.Attach(&overtakingLog{nodeLog: nodeLog{s: s, id: 1},
		queued: [][]byte{EncodeLeaseRequest(LeaseRequest{Candidate: 3, SeenVersion: 1})}})
	v, err := a.Switchover(context.Background(), 2)
	if err != nil || v.Valid || v.Reason != ReasonVersionMismatch || v.State.Master != 3 {
		t.Fatalf("switchover after a new term: %+v %v", v, err)
	}
	if n := len(s.entries); n != 3 {
		t.Fatalf("%d entries, want 3: the grant proposed once", n)
	}
}
