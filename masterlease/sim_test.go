package masterlease

import (
	"container/heap"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"
)

var (
	simSeeds = flag.Int("sim-seeds", 60, "number of seeds for TestSimLease")
	simSeed  = flag.Uint64("sim-seed", 0, "run only this seed (0: all)")
)

// The simulation runs N Lease instances over a deterministic fake
// total-order log: one sequencer orders proposals, and every node applies
// the chosen entries in order after its own random delay. Faults: a node
// isolated from the majority can neither propose (its proposals are
// dropped or accepted only by a minority, "limbo", and maybe chosen much
// later by a future leader) nor learn; a node can be paused (its clock runs
// on, it does nothing, then acts on decisions taken before the pause); a
// node can crash and restart from its last snapshot. Each clock drifts
// within 0.95 × Config.MaxClockDrift. Everything is driven by one seeded
// PRNG and a global event queue, so a seed replays exactly.

type simEvent struct {
	at  time.Duration
	seq int
	fn  func()
}

type eventQueue []*simEvent

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(*simEvent)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

type simEntry struct {
	cmd      []byte
	proposer uint32
	proposed time.Duration
	chosen   time.Duration
	hung     bool // proposed by a paused holder after it resumed
	limbo    bool // accepted by a minority, chosen later
	// epochAtPropose is the global (chosen-log) epoch when it was proposed.
	epochAtPropose uint64
}

type simNode struct {
	id       uint32
	lease    *Lease
	clock    *simClock
	up       bool
	paused   bool
	isolated bool
	applied  uint64
	snap     []byte
	snapIdx  uint64
	// writer: the node's "binlogd" while it is the ready master.
	wEpoch  uint64
	wPrev   GTID
	wSeq    uint64
	hungCmd []byte // prepared before a pause, proposed after it
	gen     int    // fault generation: heal() cancels pending recoveries
}

type simStats struct {
	entries, valid, batches, validBatches  int
	hungRejected, limboRejected, chainPass int
	terms, switchovers, fences, restarts   int
	maxHolders                             int
}

type sim struct {
	t      *testing.T
	seed   uint64
	rnd    *rand.Rand
	cfg    Config
	now    time.Duration
	seq    int
	q      eventQueue
	nodes  []*simNode
	log    []simEntry // log[i] is index i+1
	ref    State      // reference replica of the chosen log
	first  map[uint64]Verdict
	faulty int
	healed bool
	stats  simStats
	failed bool
}

func (s *sim) at(d time.Duration, fn func()) {
	s.seq++
	heap.Push(&s.q, &simEvent{at: s.now + d, seq: s.seq, fn: fn})
}

func (s *sim) fail(format string, args ...any) {
	if !s.failed {
		s.t.Errorf("seed %d at %v: %s (replay: go test ./masterlease -run TestSimLease -sim-seed=%d)",
			s.seed, s.now, fmt.Sprintf(format, args...), s.seed)
	}
	s.failed = true
}

func (s *sim) dur(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(s.rnd.Int64N(int64(hi-lo)+1))
}

func newSim(t *testing.T, seed uint64, n int) *sim {
	s := &sim{t: t, seed: seed, rnd: rand.New(rand.NewPCG(seed, 0x5eed)), cfg: DefaultConfig(),
		first: map[uint64]Verdict{}}
	eps := 0.95 * s.cfg.MaxClockDrift()
	for i := 1; i <= n; i++ {
		c := &simClock{now: &s.now, lastLocal: s.dur(0, time.Hour), rate: 1 + eps*(2*s.rnd.Float64()-1)}
		nd := &simNode{id: uint32(i), clock: c, up: true}
		nd.lease = s.newLease(nd)
		if err := nd.lease.Restore(0, nil); err != nil {
			t.Fatal(err)
		}
		s.nodes = append(s.nodes, nd)
		s.at(s.dur(0, s.cfg.RetryInterval), func() { s.tick(nd) })
		s.at(s.dur(0, 10*time.Second), func() { s.drift(nd, eps) })
	}
	return s
}

func (s *sim) newLease(nd *simNode) *Lease {
	l, err := New(s.cfg, nd.id, nd.clock, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		s.t.Fatal(err)
	}
	return l
}

func (s *sim) drift(nd *simNode, eps float64) {
	nd.clock.setRate(1 + eps*(2*s.rnd.Float64()-1))
	s.at(s.dur(time.Second, 10*time.Second), func() { s.drift(nd, eps) })
}

// tick is one round of a node's election loop and writer.
func (s *sim) tick(nd *simNode) {
	defer s.at(s.dur(s.cfg.RetryInterval*4/5, s.cfg.RetryInterval*6/5), func() { s.tick(nd) })
	if !nd.up || nd.paused {
		return
	}
	if cmd, ok := nd.lease.nextProposal(nil); ok {
		s.propose(nd, cmd, false)
	}
	st := nd.lease.Status()
	if st.Role != RoleMaster {
		return
	}
	if nd.wEpoch != st.State.Epoch {
		nd.wEpoch, nd.wPrev, nd.wSeq = st.State.Epoch, st.State.LastGTID, st.State.LastGTID.Seq
	}
	switch r := s.rnd.IntN(100); {
	case r < 45:
		s.propose(nd, s.nextBatch(nd), false)
	case r < 50: // a huge transaction in three fragments
		nd.wSeq++
		last := GTID{Server: nd.id, Seq: nd.wSeq}
		for i := 0; i < 3; i++ {
			b := Batch{Epoch: nd.wEpoch, Prev: nd.wPrev, Last: last, Events: []byte{byte(i), 1},
				More: i < 2, Continued: i > 0, Offset: uint64(2 * i)}
			if i == 2 {
				b.TxnCount = 1
			}
			s.propose(nd, EncodeBatch(b), false)
		}
		nd.wPrev = last
	case r < 51 && s.faulty == 0 && !s.healed:
		to := uint32(1 + s.rnd.IntN(len(s.nodes)))
		if to != nd.id {
			if from, err := nd.lease.prepareSwitchover(to); err == nil {
				s.stats.switchovers++
				s.propose(nd, from.grant(to), false)
			}
		}
	case r < 52 && !s.healed:
		s.stats.fences++
		s.propose(nd, nd.lease.prepareFence(st.State.Epoch), false)
	}
}

func (s *sim) nextBatch(nd *simNode) []byte {
	k := uint64(1 + s.rnd.IntN(3))
	nd.wSeq += k
	last := GTID{Server: nd.id, Seq: nd.wSeq}
	b := Batch{Epoch: nd.wEpoch, Prev: nd.wPrev, Last: last, Events: []byte(last.String()), TxnCount: uint32(k)}
	nd.wPrev = last
	return EncodeBatch(b)
}

// propose sends cmd from nd to the sequencer. An isolated node's proposal
// is lost, or accepted by a minority and chosen at some later time.
func (s *sim) propose(nd *simNode, cmd []byte, hung bool) {
	e := simEntry{cmd: cmd, proposer: nd.id, proposed: s.now, hung: hung, epochAtPropose: s.ref.Epoch}
	if nd.isolated {
		if s.rnd.IntN(2) == 0 {
			e.limbo = true
			s.at(s.dur(s.cfg.LeaseDuration/2, 4*s.cfg.LeaseDuration), func() { s.choose(e) })
		}
		return
	}
	s.at(s.dur(time.Millisecond, 20*time.Millisecond), func() { s.choose(e) })
}

func (s *sim) choose(e simEntry) {
	e.chosen = s.now
	s.log = append(s.log, e)
	idx := uint64(len(s.log))
	var v Verdict
	prevRef := s.ref
	s.ref, v = Step(s.ref, idx, e.cmd)
	s.stats.entries++
	if v.Valid {
		s.stats.valid++
		if prevRef.Epoch != s.ref.Epoch && s.ref.Master != 0 {
			s.stats.terms++
		}
	}
	if v.Entry.Kind == KindBatch {
		s.stats.batches++
		b := v.Entry.Batch
		if v.Valid {
			s.stats.validBatches++
			if e.proposer != prevRef.Master {
				s.fail("valid batch %d proposed by %d, master of epoch %d is %d", idx, e.proposer, prevRef.Epoch, prevRef.Master)
			}
		}
		// A batch proposed after its term ended is rejected (the hung
		// master; the minority-accepted batch chosen after a new term).
		if e.epochAtPropose != b.Epoch || prevRef.Epoch != b.Epoch {
			if v.Valid {
				s.fail("batch %d of epoch %d proposed at epoch %d, chosen at epoch %d, was valid", idx, b.Epoch, e.epochAtPropose, prevRef.Epoch)
			}
			if e.hung {
				s.stats.hungRejected++
			}
			if e.limbo {
				s.stats.limboRejected++
				if b.Prev == prevRef.LastGTID {
					s.stats.chainPass++ // only the epoch rejected it
				}
			}
		}
	}
	for _, nd := range s.nodes {
		s.at(s.deliverDelay(), func() { s.deliver(nd) })
	}
}

func (s *sim) deliverDelay() time.Duration {
	if s.rnd.IntN(20) == 0 {
		return s.dur(100*time.Millisecond, 600*time.Millisecond) // a slow node
	}
	return s.dur(0, 30*time.Millisecond)
}

// deliver applies every chosen entry nd has not applied yet, in order.
func (s *sim) deliver(nd *simNode) {
	if !nd.up || nd.paused || nd.isolated {
		return
	}
	for nd.applied < uint64(len(s.log)) {
		idx := nd.applied + 1
		e := s.log[idx-1]
		v := nd.lease.Apply(idx, e.cmd).(Verdict)
		nd.applied = idx
		if f, ok := s.first[idx]; !ok {
			s.first[idx] = v
		} else if f.Valid != v.Valid || f.Reason != v.Reason || f.State != v.State {
			s.fail("node %d verdict at %d: %v %v %v, first node said %v %v %v", nd.id, idx, v.Valid, v.Reason, v.State, f.Valid, f.Reason, f.State)
		}
		// The node's MariaDB applies valid batches at once.
		nd.lease.MarkCaughtUp(idx)
		if !v.Valid && v.Entry.Kind == KindBatch && e.proposer == nd.id {
			// binlogd would cut its MariaDB back to the valid log and
			// reuse the sequence numbers.
			nd.wEpoch = 0
		}
		if s.rnd.IntN(10) == 0 {
			snap, err := nd.lease.Snapshot()
			if err != nil {
				s.t.Fatal(err)
			}
			nd.snap, nd.snapIdx = snap, idx
		}
	}
	s.checkHolders()
}

// checkHolders: at no instant do two nodes hold a valid lease by their own
// clocks. A belief only starts at an event, so checking after every event
// suffices.
func (s *sim) checkHolders() {
	var holders []uint32
	for _, nd := range s.nodes {
		if nd.up && !nd.lease.Deadline().IsZero() {
			holders = append(holders, nd.id)
		}
	}
	if len(holders) > s.stats.maxHolders {
		s.stats.maxHolders = len(holders)
	}
	if len(holders) > 1 {
		s.fail("nodes %v all hold a valid lease", holders)
	}
}

// fault injects one random fault on a random healthy node, keeping a
// majority healthy.
func (s *sim) fault() {
	if s.healed {
		return
	}
	defer s.at(s.dur(time.Second, 8*time.Second), s.fault)
	if s.faulty >= (len(s.nodes)-1)/2 {
		return
	}
	// Prefer the master: its faults are the interesting ones.
	nd := s.nodes[s.rnd.IntN(len(s.nodes))]
	if s.ref.Master != 0 && s.rnd.IntN(2) == 0 {
		nd = s.nodes[s.ref.Master-1]
	}
	if !nd.up || nd.paused || nd.isolated {
		return
	}
	s.faulty++
	gen := nd.gen
	d := s.cfg.LeaseDuration
	later := func(fn func()) {
		s.at(s.dur(d/2, 3*d), func() {
			if nd.gen == gen { // not healed meanwhile
				fn()
			}
		})
	}
	switch s.rnd.IntN(3) {
	case 0: // partition, then maybe crash (its minority-accepted batches stay in limbo)
		nd.isolated = true
		later(func() {
			nd.isolated = false
			if s.rnd.IntN(2) == 0 {
				s.crash(nd)
				return
			}
			s.faulty--
			s.deliver(nd)
		})
	case 1: // long pause; a holder proposes a batch prepared before it
		if nd.lease.Status().Role == RoleMaster && nd.wEpoch != 0 {
			nd.hungCmd = s.nextBatch(nd)
		}
		nd.paused = true
		later(func() {
			s.faulty--
			s.resume(nd)
		})
	case 2:
		s.crash(nd)
	}
}

func (s *sim) resume(nd *simNode) {
	nd.paused = false
	if nd.hungCmd != nil {
		s.propose(nd, nd.hungCmd, true)
		nd.hungCmd = nil
	}
	s.deliver(nd)
}

// crash stops nd; after a while it restarts from its last snapshot.
func (s *sim) crash(nd *simNode) {
	nd.up = false
	nd.wEpoch = 0
	gen := nd.gen
	s.at(s.dur(s.cfg.LeaseDuration/10, 2*s.cfg.LeaseDuration), func() {
		if nd.gen == gen {
			s.faulty--
			s.restart(nd)
		}
	})
}

// restart brings nd back from its last snapshot; it replays the log. If it
// held the current term, a peer fences that term (binlogd recover does so
// before it restarts mysqld).
func (s *sim) restart(nd *simNode) {
	s.stats.restarts++
	nd.up = true
	nd.applied = nd.snapIdx
	nd.lease = s.newLease(nd)
	if err := nd.lease.Restore(nd.snapIdx, nd.snap); err != nil {
		s.t.Fatal(err)
	}
	s.deliver(nd)
	if st := nd.lease.State(); st.Master == nd.id {
		for _, p := range s.nodes {
			if p != nd && p.up && !p.paused && !p.isolated {
				s.stats.fences++
				s.propose(p, p.lease.prepareFence(st.Epoch), false)
				break
			}
		}
	}
}

func (s *sim) run(until time.Duration) {
	for s.q.Len() > 0 && !s.failed {
		e := s.q[0]
		if e.at > until {
			s.now = until
			return
		}
		heap.Pop(&s.q)
		s.now = e.at
		e.fn()
		s.checkHolders()
	}
}

// heal ends every fault; no new ones follow.
func (s *sim) heal() {
	s.healed = true
	for _, nd := range s.nodes {
		nd.gen++
		nd.isolated = false
		if nd.paused {
			s.resume(nd)
		}
		if !nd.up {
			s.restart(nd)
		}
		s.deliver(nd)
	}
	s.faulty = 0
}

func runSim(t *testing.T, seed uint64) simStats {
	n := 3
	if seed%3 == 0 {
		n = 5
	}
	s := newSim(t, seed, n)
	d := s.cfg.LeaseDuration
	s.at(2*d, s.fault)
	faultsUntil := 24 * d
	s.run(faultsUntil)
	s.heal()
	s.checkHolders()
	s.run(faultsUntil + 2*d)
	if s.failed {
		return s.stats
	}
	// After healing, exactly one master within two lease durations, and
	// every node agrees who it is.
	var holders []uint32
	for _, nd := range s.nodes {
		if !nd.lease.Deadline().IsZero() {
			holders = append(holders, nd.id)
		}
	}
	if len(holders) != 1 {
		s.fail("%d holders %v two lease durations after healing", len(holders), holders)
		return s.stats
	}
	for _, nd := range s.nodes {
		s.deliver(nd) // entries chosen in the last few milliseconds
		if m := nd.lease.State().Master; m != holders[0] {
			s.fail("node %d thinks the master is %d, holder is %d", nd.id, m, holders[0])
		}
		if nd.applied != uint64(len(s.log)) {
			s.fail("node %d applied %d of %d entries", nd.id, nd.applied, len(s.log))
		}
	}
	return s.stats
}

func TestSimLease(t *testing.T) {
	var total simStats
	seeds := uint64(*simSeeds)
	if testing.Short() {
		seeds = 10
	}
	from := uint64(1)
	if *simSeed != 0 {
		from, seeds = *simSeed, 1
	}
	for seed := from; seed < from+seeds; seed++ {
		st := runSim(t, seed)
		if t.Failed() {
			return
		}
		total.entries += st.entries
		total.valid += st.valid
		total.batches += st.batches
		total.validBatches += st.validBatches
		total.hungRejected += st.hungRejected
		total.limboRejected += st.limboRejected
		total.chainPass += st.chainPass
		total.terms += st.terms
		total.switchovers += st.switchovers
		total.fences += st.fences
		total.restarts += st.restarts
	}
	t.Logf("%d seeds: %+v", seeds, total)
	if *simSeed == 0 && !testing.Short() {
		// The scenarios must actually have happened.
		if total.hungRejected == 0 || total.limboRejected == 0 || total.chainPass == 0 ||
			total.switchovers == 0 || total.restarts == 0 || total.validBatches == 0 {
			t.Errorf("a scenario never happened: %+v", total)
		}
	}
}
