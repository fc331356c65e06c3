package paxos

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"testing"

	"phxgo/wal"
)

// The simulation drives several cores over a seeded, lossy network with
// partitions and crash-restarts, in virtual time, then heals everything
// and checks that pending proposals complete. Every run checks:
//   - agreement: no two different values chosen at one index anywhere;
//   - applied state machines are prefixes of one another, commands are
//     applied at most once, and every successful Propose is applied;
//   - liveness after heal.
// A failure names its seed; -seed=N replays it alone.

var (
	flagSeeds = flag.Int("seeds", 200, "simulation seeds to run (make sim SEEDS=N)")
	flagSeed  = flag.Int64("seed", -1, "replay only this simulation seed")
)

// listSM is a state machine whose state is the list of applied commands.
type listSM struct{ list [][]byte }

func (s *listSM) Apply(index uint64, cmd []byte) any {
	s.list = append(s.list, append([]byte(nil), cmd...))
	return len(s.list)
}

func (s *listSM) Snapshot() ([]byte, error) {
	var b []byte
	for _, c := range s.list {
		b = binary.AppendUvarint(b, uint64(len(c)))
		b = append(b, c...)
	}
	return b, nil
}

func (s *listSM) Restore(applied uint64, snap []byte) error {
	s.list = nil
	for len(snap) > 0 {
		n, k := binary.Uvarint(snap)
		if k <= 0 || uint64(len(snap)-k) < n {
			return fmt.Errorf("bad snapshot")
		}
		s.list = append(s.list, append([]byte(nil), snap[k:k+int(n)]...))
		snap = snap[k+int(n):]
	}
	return nil
}

type simOpts struct {
	nodes      int
	steps      int // virtual ms of faults
	drop, dup  float64
	partitions bool
	crashes    bool
	campaigns  bool // Campaign on random nodes, sometimes two at once
	useWAL     bool
	// spares: extra nodes that start outside the cluster (joining); with
	// changes, random one-at-a-time adds and removes move nodes in and out.
	spares  int
	changes bool
	compact bool // truncate logs at random checkpoints (snapshot catch-up)
	// learners: changes also add learners and promote or demote members
	// (learner_sim_test.go).
	learners bool
}

type simNode struct {
	id      uint32
	st      Storage
	dir     string
	rn      *rawNode // the driver's only way in (rawnode.go)
	core    *core    // rn's core, for the checks only; nil while down
	app     *applier
	sm      *listSM
	up      bool
	inc     uint64
	waiting map[uint64]string
	phase   int64   // tick offset
	unsaved []Ready // handed out, not yet persisted (async pipeline)
	meta    []byte  // persisted membership history (survives crashes)
	join    bool
	ckpts   []checkpoint
	camp    *simCampaign // a Campaign the driver waits on, as Node's
}

// simCampaign is Node's campaignReq: the terms and tick at the call.
type simCampaign struct {
	terms uint64
	start int64
}

type simMsg struct {
	at int64
	m  Message
}

type sim struct {
	t       *testing.T
	seed    int64
	o       simOpts
	rng     *rand.Rand
	now     int64
	nodes   map[uint32]*simNode
	ids     []uint32
	net     []simMsg
	cut     map[[2]uint32]bool
	faulty  bool
	chosen  map[uint64][]byte
	ok      map[string]uint64 // successful proposals -> index
	nextID  int
	changes int // membership changes chosen (checkHistories)
	// learnerLeads counts steps where a node led although it was a
	// learner in an active configuration (learner_sim_test.go).
	learnerLeads int

	compactions, installs int
	lag                   bool // persist less often (runSim)
}

func (s *sim) fatalf(format string, a ...any) {
	s.t.Helper()
	s.t.Fatalf("seed %d (replay: go test ./paxos/ -run TestSim -seed=%d -v) at t=%d: %s", s.seed, s.seed, s.now, fmt.Sprintf(format, a...))
}

func (s *sim) cfg(n *simNode) coreConfig {
	id, inc := n.id, n.inc
	peers := s.ids[:s.o.nodes]
	if n.join {
		peers = s.ids // seeds: everyone
	}
	addrs := map[uint32]string{}
	for _, p := range s.ids {
		addrs[p] = fmt.Sprintf("sim-%d", p)
	}
	return coreConfig{ID: id, Peers: peers, Addrs: addrs, Join: n.join, Meta: n.meta,
		ElectionTicks: 10, HeartbeatTicks: *flagSimHeartbeat, RetransmitTicks: 2,
		RetryTicks: 20, Window: 8, BatchMaxBytes: 64, FetchMaxBytes: 200,
		Thrifty: s.seed%4 != 0,
		Seed:    s.seed*1000 + int64(id)*100 + int64(inc), SeqStart: inc << 32}
}

func (s *sim) start(n *simNode) {
	n.inc++
	if n.st == nil {
		if s.o.useWAL {
			l, err := wal.Open(n.dir, wal.Options{NoSync: true})
			if err != nil {
				s.fatalf("open wal: %v", err)
			}
			n.st = l
		} else {
			n.st = newLossyStorage()
		}
	}
	n.sm = &listSM{}
	n.app = newApplier(n.sm)
	c, err := restore(n.st, n.app, s.cfg(n))
	if err != nil {
		s.fatalf("restore node %d: %v", n.id, err)
	}
	n.rn, n.core = c, c.c
	n.up = true
	n.waiting = make(map[uint64]string)
	s.process(n)
}

func (s *sim) crash(n *simNode) {
	n.up = false
	n.unsaved = nil
	n.ckpts = nil // in memory only, as in Node
	n.rn, n.core = nil, nil
	n.camp = nil // Node's waiters end with it (ErrStopped)
	if ls, ok := n.st.(*lossyStorage); ok {
		ls.crash(s.rng)
	}
	if s.o.useWAL {
		n.st.Close()
		n.st = nil
	}
}

// process takes a Ready and sends its Early messages; like the driver's
// pipeline, persisting it (and sending and applying what depends on that)
// may lag behind, and a crash loses what was not persisted yet.
func (s *sim) process(n *simNode) {
	known := n.core.applied // changes are recorded up to here (horizon)
	rd := n.rn.Ready()
	s.checkHorizon(n, &rd, known)
	for _, m := range rd.Early {
		s.checkEarlyChosen(n, &rd, m)
		s.sendMsg(m)
	}
	if !rd.empty() {
		n.unsaved = append(n.unsaved, rd)
	}
	persistOdds := 7
	if s.lag {
		persistOdds = 3
	}
	if s.rng.Intn(10) < persistOdds {
		s.persist(n)
	}
}

// checkHorizon: a leader proposes only instances whose configuration it
// knows, at most Alpha above the last entry it handed out (changes are
// recorded at hand-out): beyond, its quorum for the instance would be
// counted among the members before a change it had seen chosen but not
// recorded (TestSimLearners seed 614 proposed 461-465 with applied 396,
// chosen 401, a change at 399 unknown).
func (s *sim) checkHorizon(n *simNode, rd *Ready, known uint64) {
	for _, a := range rd.Update.Accepted {
		if a.Ballot.Node == n.id && a.Ballot == n.core.ballot && a.Index > known+Alpha {
			s.fatalf("node %d proposed instance %d under %v with changes recorded only up to %d (horizon %d)", n.id, a.Index, a.Ballot, known, known+Alpha)
		}
	}
}

// checkEarlyChosen: an Early message leaves before n's pending saves are
// durable, so a chosen index it announces (a proposal's Accept carries
// the leader's, sendProposals) must not cover an accept among them: the
// leader counted its own vote at once, and a notice ahead of that vote's
// save could make followers apply a value a crash then un-chooses.
func (s *sim) checkEarlyChosen(n *simNode, rd *Ready, m Message) {
	if m.Chosen == 0 {
		return
	}
	for _, r := range append(n.unsaved[:len(n.unsaved):len(n.unsaved)], *rd) {
		for _, a := range r.Update.Accepted {
			if a.Index <= m.Chosen {
				s.fatalf("node %d: Early %v to %d announces chosen %d before its accept at %d is durable", n.id, m.Type, m.To, m.Chosen, a.Index)
			}
		}
	}
}

// persist runs the production pipeline (persist.go) on the Readys taken
// since the last call, both stages at once (simPipe).
func (s *sim) persist(n *simNode) {
	if len(n.unsaved) == 0 {
		return
	}
	batch := n.unsaved
	n.unsaved = nil
	env := simPipe{s, n}
	// Node's persister takes what waits for it, so consecutive Readys
	// often go into separate saves, all submitted before the first is
	// complete: cut the batch at random points.
	var jobs []*saveJob
	for len(batch) > 0 {
		k := 1 + s.rng.Intn(len(batch))
		if err := persistBatch(env, batch[:k], func(j *saveJob) { jobs = append(jobs, j) }); err != nil {
			s.fatalf("node %d: %v", n.id, err)
		}
		batch = batch[k:]
	}
	for k, j := range jobs {
		if !n.up {
			return // crashed in an earlier job
		}
		s.armCrash(env, j)
		if s.rng.Intn(2) == 0 {
			// As Node's completer does while j's save syncs: what later
			// jobs commit and is durable already is applied first
			// (apply checks it is in storage).
			startSave(env, j)
			applyAhead(env, j, jobs[k+1:])
		}
		if err := completeSave(env, j); err != nil && !errors.Is(err, errSimCrash) {
			s.fatalf("node %d: %v", n.id, err)
		}
	}
}

func (s *sim) apply(n *simNode, committed []Entry) {
	for _, e := range committed {
		if e.Index >= n.st.HardState().FirstIndex {
			// Applied only once its accept is in storage (persist.go).
			as, err := n.st.Range(e.Index, e.Index, 1)
			if err != nil || len(as) != 1 || !bytes.Equal(as[0].Value, e.Value) {
				s.fatalf("node %d: applies %d before storage holds it (%v, %d found)", n.id, e.Index, err, len(as))
			}
		}
		if v, ok := s.chosen[e.Index]; ok && !bytes.Equal(v, e.Value) {
			s.fatalf("node %d: index %d chosen twice: %x vs %x", n.id, e.Index, v, e.Value)
		}
		s.chosen[e.Index] = e.Value
		_, err := n.app.applyEntry(e, func(c command, res any) {
			if c.Node != n.id {
				return
			}
			if d, ok := n.waiting[c.Seq]; ok {
				delete(n.waiting, c.Seq)
				if res != len(n.sm.list) {
					s.fatalf("result %v, want %d", res, len(n.sm.list))
				}
				s.ok[d] = e.Index
			}
		})
		if err != nil {
			s.fatalf("apply: %v", err)
		}
		if s.rng.Intn(4) == 0 {
			snap, err := n.app.snapshot()
			if err != nil {
				s.fatalf("snapshot: %v", err)
			}
			if err := n.st.SaveApplied(n.app.applied, snap); err != nil {
				s.fatalf("save applied: %v", err)
			}
			n.ckpts = append(n.ckpts, checkpoint{index: n.app.applied, snap: snap})
			if s.o.compact && s.rng.Intn(3) == 0 {
				s.compactRandom(n)
			}
		}
	}
}

// compactRandom truncates n's log at one of its checkpoints, as
// Node.Compact does.
func (s *sim) compactRandom(n *simNode) {
	first := n.st.HardState().FirstIndex
	var fit []checkpoint
	for _, c := range n.ckpts {
		if c.index+1 > first {
			fit = append(fit, c)
		}
	}
	if len(fit) == 0 {
		return
	}
	c := fit[s.rng.Intn(len(fit))]
	if err := n.st.TruncateWithBase(c.index+1, c.snap); err != nil {
		s.fatalf("node %d: compact below %d: %v", n.id, c.index+1, err)
	}
	s.compactions++
}

// install applies a peer's snapshot as the driver does; the node's own
// commands inside it count as done if the snapshot holds them.
func (s *sim) install(n *simNode, in *InstalledSnapshot) {
	if in.Index <= n.app.applied {
		s.fatalf("node %d: install at %d, applied %d", n.id, in.Index, n.app.applied)
	}
	if err := n.app.restore(in.Index, in.Data); err != nil {
		s.fatalf("node %d: restore snapshot at %d: %v", n.id, in.Index, err)
	}
	s.installs++
	has := map[string]bool{}
	for _, c := range n.sm.list {
		has[string(c)] = true
	}
	for seq, d := range n.waiting {
		if n.app.done(n.id, seq) {
			if !has[d] {
				s.fatalf("node %d: command %q done per the snapshot's table but not in its state", n.id, d)
			}
			delete(n.waiting, seq)
			s.ok[d] = in.Index
		}
	}
	n.ckpts = []checkpoint{{index: in.Index, snap: in.Data}}
}

func (s *sim) sendMsg(m Message) {
	if s.faulty {
		if s.cut[[2]uint32{m.From, m.To}] || s.rng.Float64() < s.o.drop {
			return
		}
		if s.rng.Float64() < s.o.dup {
			s.net = append(s.net, simMsg{at: s.now + 1 + s.rng.Int63n(30), m: m})
		}
	}
	s.net = append(s.net, simMsg{at: s.now + 1 + s.rng.Int63n(8), m: m})
}

func (s *sim) deliver() {
	var keep []simMsg
	var due []simMsg
	for _, sm := range s.net {
		if sm.at <= s.now {
			due = append(due, sm)
		} else {
			keep = append(keep, sm)
		}
	}
	s.net = keep
	s.rng.Shuffle(len(due), func(i, j int) { due[i], due[j] = due[j], due[i] })
	touched := map[uint32]bool{}
	for _, d := range due {
		n := s.nodes[d.m.To]
		if n == nil || !n.up {
			continue
		}
		if s.faulty && s.cut[[2]uint32{d.m.From, d.m.To}] {
			continue
		}
		n.rn.Step(d.m)
		touched[n.id] = true
		if s.rng.Intn(3) == 0 { // sometimes a Ready per message, sometimes grouped
			s.process(n)
		}
	}
	for _, id := range s.ids {
		if touched[id] && s.nodes[id].up {
			s.process(s.nodes[id])
		}
	}
}

func (s *sim) proposeRandom() {
	n := s.nodes[s.ids[s.rng.Intn(len(s.ids))]]
	if !n.up {
		return
	}
	s.nextID++
	d := fmt.Sprintf("c%d", s.nextID)
	var flags byte
	if s.rng.Intn(10) == 0 {
		flags = flagBarrier
		d = "barrier-" + d
	}
	seq, err := n.rn.Propose([]byte(d), flags)
	if err != nil {
		s.nextID--
		return
	}
	if flags == 0 {
		n.waiting[seq] = d
	}
	s.process(n)
}

func (s *sim) stepOnce() {
	s.now++
	s.deliver()
	for _, id := range s.ids {
		n := s.nodes[id]
		if n.up && (s.now+n.phase)%10 == 0 {
			n.rn.Tick()
			s.process(n)
			s.checkLearnerLeads(n)
		}
		if n.up && s.rng.Intn(2) == 0 {
			s.persist(n)
		}
	}
}

func (s *sim) pending() int {
	k := 0
	for _, n := range s.nodes {
		if n.up && s.final().Has(n.id) {
			k += len(n.waiting)
		}
	}
	return k
}

// final is the latest membership any node knows (the one heal converges
// on); removed nodes' proposals may stay pending forever.
func (s *sim) final() *Membership {
	var best *history
	for _, id := range s.ids {
		if h := s.nodes[id].core; h != nil && h.hist != nil && (best == nil || len(h.hist.items) > len(best.items)) {
			best = h.hist
		}
	}
	return best.latest()
}

// changeRandom proposes one add or remove on a random member, against
// the members it knows (so concurrent ones conflict, and some are made
// while another is pending: both must be refused by the log).
func (s *sim) changeRandom() {
	n := s.nodes[s.ids[s.rng.Intn(len(s.ids))]]
	if !n.up || !n.core.member() {
		return
	}
	cur := n.core.hist.latest()
	next := slices.Clone(cur.Members)
	var out []uint32
	for _, id := range s.ids {
		if !cur.Has(id) {
			out = append(out, id)
		}
	}
	if s.o.learners && s.rng.Intn(3) == 0 {
		if !flipRandom(s.rng, next) {
			return
		}
	} else if len(out) > 0 && (len(next) <= 3 || s.rng.Intn(2) == 0) {
		id := out[s.rng.Intn(len(out))]
		next = append(next, Member{ID: id, Addr: fmt.Sprintf("sim-%d", id), Learner: s.o.learners && s.rng.Intn(2) == 0})
	} else if len(next) > 1 {
		k := s.rng.Intn(len(next))
		next = slices.Delete(next, k, k+1)
	} else {
		return
	}
	if _, err := n.rn.Propose(encodeChange(membershipChange{Prev: cur.Index, Members: next}), flagMembership); err != nil {
		return
	}
	s.process(n)
}

func runSim(t *testing.T, seed int64, o simOpts) {
	s := newSim(t, seed, o)
	defer s.close()
	// Every third seed the disk lags more: several saves in flight, so
	// completion order and applyAhead matter.
	s.lag = seed%3 == 2
	s.faulty = true
	s.faults()
	s.heal()
}

func newSim(t *testing.T, seed int64, o simOpts) *sim {
	s := &sim{t: t, seed: seed, o: o, rng: rand.New(rand.NewSource(seed)), nodes: map[uint32]*simNode{},
		cut: map[[2]uint32]bool{}, chosen: map[uint64][]byte{}, ok: map[string]uint64{}}
	for i := 1; i <= o.nodes+o.spares; i++ {
		s.ids = append(s.ids, uint32(i))
	}
	for _, id := range s.ids {
		n := &simNode{id: id, phase: s.rng.Int63n(10), join: int(id) > o.nodes}
		if o.useWAL {
			n.dir = t.TempDir()
		}
		s.nodes[id] = n
		s.start(n)
	}
	return s
}

func (s *sim) close() {
	for _, n := range s.nodes {
		if n.st != nil {
			n.st.Close()
		}
	}
}

// faults runs o.steps virtual ms of load with the configured faults.
func (s *sim) faults() {
	o := s.o
	for s.now < int64(o.steps) {
		if s.rng.Intn(3) == 0 {
			s.proposeRandom()
		}
		if o.partitions && s.rng.Intn(400) == 0 {
			s.cut = map[[2]uint32]bool{}
			if s.rng.Intn(2) == 0 {
				for _, a := range s.ids {
					for _, b := range s.ids {
						if a != b && s.rng.Intn(3) == 0 {
							s.cut[[2]uint32{a, b}] = true
						}
					}
				}
			}
		}
		if o.crashes && s.rng.Intn(300) == 0 {
			n := s.nodes[s.ids[s.rng.Intn(len(s.ids))]]
			if n.up {
				s.crash(n)
			} else {
				s.start(n)
			}
		}
		if o.campaigns && s.rng.Intn(400) == 0 {
			for k := 1 + s.rng.Intn(2); k > 0; k-- {
				if n := s.nodes[s.ids[s.rng.Intn(len(s.ids))]]; n.up {
					// Node's path: refused (ErrNoQuorum) by a node that
					// heard neither a leader nor a majority lately, as a
					// partitioned owner's would be.
					s.campaign(n)
					s.process(n)
				}
			}
		}
		s.checkCampaigns()
		if o.changes && s.rng.Intn(150) == 0 {
			s.changeRandom()
		}
		if s.rng.Intn(200) == 0 { // a caller gives up
			n := s.nodes[s.ids[s.rng.Intn(len(s.ids))]]
			if n.up {
				if seqs := n.core.pendingSeqs(); len(seqs) > 0 {
					seq := seqs[s.rng.Intn(len(seqs))]
					n.rn.Abandon(seq)
					delete(n.waiting, seq)
				}
			}
		}
		s.stepOnce()
	}
}

// heal ends the faults (everyone up, no loss); pending proposals must
// complete and all nodes converge, then the invariants are checked.
func (s *sim) heal() {
	s.faulty = false
	for _, id := range s.ids {
		if n := s.nodes[id]; !n.up {
			s.start(n)
		}
	}
	deadline := s.now + 30000
	for s.pending() > 0 {
		if s.now > deadline {
			s.fatalf("liveness: %d proposals still pending after heal; status %s", s.pending(), s.describe())
		}
		s.stepOnce()
	}
	// One more command through the log, then wait for all to apply it.
	for {
		n := s.nodes[s.ids[s.rng.Intn(len(s.ids))]]
		if s.final().Has(n.id) {
			if seq, err := n.rn.Propose([]byte("final"), 0); err == nil {
				n.waiting[seq] = "final"
				s.process(n)
				break
			}
		}
		s.stepOnce()
	}
	for s.pending() > 0 || !s.converged() {
		if s.now > deadline+30000 {
			s.fatalf("liveness: no convergence after heal; %s", s.describe())
		}
		s.stepOnce()
	}
	s.check()
}

func (s *sim) converged() bool {
	var a uint64
	first := true
	fin := s.final()
	for _, id := range s.ids {
		n := s.nodes[id]
		if !fin.Has(id) {
			continue
		}
		if first {
			a, first = n.app.applied, false
		} else if n.app.applied != a {
			return false
		}
	}
	return true
}

func (s *sim) describe() string {
	var b bytes.Buffer
	for _, id := range s.ids {
		n := s.nodes[id]
		c := n.core
		if c == nil {
			fmt.Fprintf(&b, "[n%d down] ", id)
			continue
		}
		fmt.Fprintf(&b, "[n%d %s leader=%d promised=%v chosen=%d applied=%d stable=%d next=%d peerChosen=%d/%d fetching=%v queue=%d pending=%d waiting=%d] ",
			id, c.role, c.leader, c.promised, c.chosen, n.app.applied, c.stable, c.next, c.peerChosen, c.fetchFrom, c.fetching, len(c.queue), len(c.pending), len(n.waiting))
		if c.hist != nil {
			for _, it := range c.hist.items {
				fmt.Fprintf(&b, "{cfg@%d act %d %v} ", it.Index, it.Active, it.IDs())
			}
		} else {
			fmt.Fprintf(&b, "{joining} ")
		}
		fmt.Fprintf(&b, "targets=%v ", c.targets)
		if in := c.log[c.chosen+1]; in != nil {
			fmt.Fprintf(&b, "{next inst: ballot=%v chosen=%v proposed=%v votes=%b} ", in.ballot, in.chosen, in.proposed, in.votes)
		}
	}
	return b.String()
}

func (s *sim) check() {
	s.checkHistories()
	var longest [][]byte
	for _, id := range s.ids {
		l := s.nodes[id].sm.list
		seen := map[string]bool{}
		for _, c := range l {
			if seen[string(c)] {
				s.fatalf("node %d applied %q twice", id, c)
			}
			seen[string(c)] = true
		}
		if len(l) > len(longest) {
			longest = l
		}
	}
	for _, id := range s.ids {
		l := s.nodes[id].sm.list
		for i := range l {
			if !bytes.Equal(l[i], longest[i]) {
				s.fatalf("node %d applied log diverges at %d: %q vs %q", id, i, l[i], longest[i])
			}
		}
	}
	in := map[string]bool{}
	for _, c := range longest {
		in[string(c)] = true
	}
	keys := make([]string, 0, len(s.ok))
	for d := range s.ok {
		keys = append(keys, d)
	}
	sort.Strings(keys)
	for _, d := range keys {
		if !in[d] {
			s.fatalf("successful proposal %q missing from the applied log", d)
		}
	}
	if len(s.ok) == 0 {
		s.fatalf("no proposal succeeded")
	}
}

func simSeeds(t *testing.T, name string, o simOpts, n int) {
	t.Run(name, func(t *testing.T) {
		if *flagSeed >= 0 {
			runSim(t, *flagSeed, o)
			return
		}
		for seed := int64(1); seed <= int64(n); seed++ {
			runSim(t, seed, o)
			if t.Failed() {
				return
			}
		}
	})
}

func TestSimReliable(t *testing.T) {
	simSeeds(t, "3nodes", simOpts{nodes: 3, steps: 3000}, max(*flagSeeds/10, 3))
}

func TestSimFaults(t *testing.T) {
	o := simOpts{nodes: 3, steps: 4000, drop: 0.1, dup: 0.05, partitions: true, crashes: true, campaigns: true}
	simSeeds(t, "3nodes", o, *flagSeeds)
	o.nodes = 5
	simSeeds(t, "5nodes", o, *flagSeeds)
}

// TestSimMembership: 3 initial members and 2 spares; random one-at-a-time
// adds and removes (some concurrent, some while another is pending)
// under loss, partitions, crashes and campaigns. Agreement must hold on
// every index and every configuration.
func TestSimMembership(t *testing.T) {
	o := simOpts{nodes: 3, spares: 2, changes: true, steps: 12000, drop: 0.1, dup: 0.05, partitions: true, crashes: true, campaigns: true}
	total := 0
	n := max(*flagSeeds/2, 5)
	t.Run("3+2nodes", func(t *testing.T) {
		for seed := int64(1); seed <= int64(n); seed++ {
			if *flagSeed >= 0 {
				seed = *flagSeed
			}
			s := newSim(t, seed, o)
			s.faulty = true
			s.faults()
			s.heal()
			total += s.changes
			s.close()
			if t.Failed() || *flagSeed >= 0 {
				return
			}
		}
	})
	t.Logf("%d membership changes chosen over %d seeds", total, n)
	if total == 0 {
		t.Fatal("no membership change was ever chosen")
	}
	if testing.Short() {
		return
	}
	// Over the real wal: the history file is the sim's, the log Badger's.
	o.useWAL, o.steps = true, 6000
	simSeeds(t, "3+2nodes-wal", o, max(*flagSeeds/50, 2))
}

// TestSimCompact: nodes truncate their logs at random checkpoints while
// others lag behind (partitions, crashes); a lagging node catches up
// through a peer's snapshot. The safety checks above still hold.
func TestSimCompact(t *testing.T) {
	o := simOpts{nodes: 3, steps: 4000, drop: 0.1, dup: 0.05, partitions: true, crashes: true, campaigns: true, compact: true}
	var compactions, installs int
	t.Run("3nodes", func(t *testing.T) {
		seeds := []int64{*flagSeed}
		if *flagSeed < 0 {
			seeds = nil
			for seed := int64(1); seed <= int64(max(*flagSeeds/2, 3)); seed++ {
				seeds = append(seeds, seed)
			}
		}
		for _, seed := range seeds {
			s := newSim(t, seed, o)
			s.faulty = true
			s.faults()
			s.heal()
			s.close()
			compactions += s.compactions
			installs += s.installs
			if t.Failed() {
				return
			}
		}
	})
	t.Logf("compactions %d, snapshot installs %d", compactions, installs)
	if *flagSeed < 0 && installs == 0 {
		t.Fatalf("no lagging node ever caught up through a snapshot (%d compactions)", compactions)
	}
	o.useWAL, o.steps = true, 2000
	simSeeds(t, "3nodes-wal", o, max(*flagSeeds/50, 2))
}

func TestSimWAL(t *testing.T) {
	if testing.Short() {
		t.Skip("wal simulation skipped in -short")
	}
	o := simOpts{nodes: 3, steps: 2000, drop: 0.1, dup: 0.05, partitions: true, crashes: true, campaigns: true, useWAL: true}
	simSeeds(t, "3nodes", o, max(*flagSeeds/50, 2))
}

// leaderID returns the node whose core leads, 0 if none or several.
func (s *sim) leaderID() uint32 {
	var l uint32
	for _, id := range s.ids {
		if n := s.nodes[id]; n.up && n.core.role == leader {
			if l != 0 {
				return 0
			}
			l = id
		}
	}
	return l
}

// campaign starts a Campaign on n as Node does (onCampaign); it reports
// whether n leads or campaigns now.
func (s *sim) campaign(n *simNode) (ok bool) {
	terms, now := n.rn.Soft().Terms, n.rn.Now()
	leading, err := n.rn.Campaign()
	if err != nil || leading {
		return err == nil
	}
	if n.camp == nil {
		n.camp = &simCampaign{terms: terms, start: now}
	}
	return true
}

// checkCampaigns ends campaigns as Node's checkCampaigns does: led, or
// no majority heard in 2E ticks since the call (then StopCampaign). It
// returns the nodes whose campaign failed so.
func (s *sim) checkCampaigns() (failed []uint32) {
	for _, id := range s.ids {
		n := s.nodes[id]
		if !n.up || n.camp == nil {
			continue
		}
		switch {
		case n.rn.Soft().Terms > n.camp.terms:
		case n.rn.CampaignFailed(n.camp.start):
			failed = append(failed, id)
		default:
			continue
		}
		n.camp = nil
		n.rn.StopCampaign()
		s.process(n)
	}
	return failed
}

// runCampaign: on a reliable network under load, one node (or two at
// once, dueling) campaigns; each must lead within a bounded time, and
// afterwards the leader stays put: no ballot moves while it heartbeats.
func runCampaign(t *testing.T, seed int64, nodes, campaigners int) {
	s := newSim(t, seed, simOpts{nodes: nodes})
	defer s.close()
	run := func(steps int, until func() bool) bool {
		for end := s.now + int64(steps); s.now < end; {
			if until != nil && until() {
				return true
			}
			if s.rng.Intn(3) == 0 {
				s.proposeRandom()
			}
			s.stepOnce()
		}
		return until == nil
	}
	if !run(5000, func() bool { return s.leaderID() != 0 }) {
		s.fatalf("no leader; %s", s.describe())
	}
	run(300, nil)
	old := s.leaderID()
	var cs []*simNode
	terms := map[uint32]uint64{}
	for _, k := range s.rng.Perm(len(s.ids)) {
		if id := s.ids[k]; id != old && len(cs) < campaigners {
			n := s.nodes[id]
			cs = append(cs, n)
			terms[id] = n.core.terms
		}
	}
	for _, n := range cs {
		// Node's path: a follower of 5 hears only the leader, yet is let
		// campaign, and its campaign is never failed (ErrNoQuorum) on
		// this healthy network.
		if !s.campaign(n) {
			s.fatalf("node %d: Campaign refused (ErrNoQuorum); %s", n.id, s.describe())
		}
		s.process(n)
	}
	// Two duelling campaigners each lead once, within a few backoffs.
	if !run(20000, func() bool {
		if f := s.checkCampaigns(); len(f) > 0 {
			s.fatalf("campaign of %v failed (ErrNoQuorum) on a healthy network; %s", f, s.describe())
		}
		for _, n := range cs {
			if n.core.terms == terms[n.id] {
				return false
			}
		}
		return true
	}) {
		s.fatalf("campaign did not end; %s", s.describe())
	}
	for _, n := range cs {
		if n.core.campaigning {
			s.fatalf("node %d still campaigning after leading", n.id)
		}
	}
	if !run(3000, func() bool { return s.leaderID() != 0 }) {
		s.fatalf("no single leader after the campaign; %s", s.describe())
	}
	run(300, nil)
	// Stable: the same leader, the same promised ballots, for 200 ticks.
	l := s.leaderID()
	if len(cs) == 1 && l != cs[0].id {
		s.fatalf("node %d campaigned, but %d leads", cs[0].id, l)
	}
	promised := map[uint32]Ballot{}
	for _, id := range s.ids {
		promised[id] = s.nodes[id].core.promised
	}
	run(2000, func() bool {
		for _, id := range s.ids {
			if p := s.nodes[id].core.promised; p != promised[id] {
				s.fatalf("node %d promised %v after the campaign settled (was %v); leader %d", id, p, promised[id], l)
			}
		}
		if s.leaderID() != l {
			s.fatalf("leader moved from %d to %d after the campaign settled", l, s.leaderID())
		}
		return false
	})
	s.heal()
}

// runCampaignMinority: a node cut off with a minority (the leader among
// it or not) campaigns right after the cut, while it still believes in
// the leader; its campaign must fail (ErrNoQuorum) exactly 2E ticks
// after the call, the bound Node.Campaign documents, without leading.
func runCampaignMinority(t *testing.T, seed int64, nodes int) {
	s := newSim(t, seed, simOpts{nodes: nodes})
	defer s.close()
	for end := s.now + 5000; s.leaderID() == 0; s.stepOnce() {
		if s.now > end {
			s.fatalf("no leader; %s", s.describe())
		}
	}
	for end := s.now + 300; s.now < end; s.stepOnce() {
		if s.rng.Intn(3) == 0 {
			s.proposeRandom()
		}
	}
	perm := s.rng.Perm(len(s.ids))
	side := map[uint32]bool{}
	for _, k := range perm[:(nodes-1)/2] {
		side[s.ids[k]] = true
	}
	a := s.nodes[s.ids[perm[0]]]
	for _, x := range s.ids {
		for _, y := range s.ids {
			if side[x] != side[y] {
				s.cut[[2]uint32{x, y}] = true
			}
		}
	}
	s.faulty = true // the cut only (drop is 0); heal ends it
	if a.core.role == leader {
		return // Campaign returns nil at once: nothing to judge
	}
	if !s.campaign(a) {
		s.fatalf("node %d: Campaign refused right after the cut; %s", a.id, s.describe())
	}
	start, terms := a.camp.start, a.camp.terms
	for end := s.now + 5000; ; s.stepOnce() {
		if s.now > end {
			s.fatalf("node %d's campaign in a minority never ended; %s", a.id, s.describe())
		}
		if a.core.terms != terms {
			s.fatalf("node %d led from a minority; %s", a.id, s.describe())
		}
		if f := s.checkCampaigns(); len(f) > 0 {
			if len(f) != 1 || f[0] != a.id {
				s.fatalf("campaigns of %v failed, want %d's", f, a.id)
			}
			break
		}
	}
	if got, want := a.core.tick-start, int64(2*a.core.cfg.ElectionTicks); got != want {
		s.fatalf("node %d's campaign failed %d ticks after the call, want %d", a.id, got, want)
	}
	s.heal()
}

func TestSimCampaignMinority(t *testing.T) {
	n := max(*flagSeeds/20, 3)
	for _, nodes := range []int{5, 7} {
		t.Run(fmt.Sprint(nodes, "nodes"), func(t *testing.T) {
			if *flagSeed >= 0 {
				runCampaignMinority(t, *flagSeed, nodes)
				return
			}
			for seed := int64(1); seed <= int64(n); seed++ {
				runCampaignMinority(t, seed, nodes)
				if t.Failed() {
					return
				}
			}
		})
	}
}

func TestSimCampaign(t *testing.T) {
	n := max(*flagSeeds/20, 3)
	for _, tc := range []struct {
		name               string
		nodes, campaigners int
	}{{"3nodes", 3, 1}, {"5nodes", 5, 1}, {"7nodes", 7, 1}, {"3nodes-duel", 3, 2}, {"5nodes-duel", 5, 2}, {"7nodes-duel", 7, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			if *flagSeed >= 0 {
				runCampaign(t, *flagSeed, tc.nodes, tc.campaigners)
				return
			}
			for seed := int64(1); seed <= int64(n); seed++ {
				runCampaign(t, seed, tc.nodes, tc.campaigners)
				if t.Failed() {
					return
				}
			}
		})
	}
}

// TestSimOrder: commands one node proposes while it leads under one
// ballot are applied in the order it proposed them (ProposeAsync's
// guarantee), with several per step, a small window and small batches,
// other nodes proposing too, and a network that delays and reorders.
func TestSimOrder(t *testing.T) {
	for seed := int64(1); seed <= int64(max(*flagSeeds/100, 2)); seed++ {
		if *flagSeed >= 0 {
			seed = *flagSeed
		}
		s := newSim(t, seed, simOpts{nodes: 3})
		for s.leaderID() == 0 {
			s.stepOnce()
		}
		ld := s.nodes[s.leaderID()]
		ballot := ld.core.ballot
		var mine []string
		for k := 0; k < 800; k++ {
			for j := s.rng.Intn(4); j > 0; j-- {
				d := fmt.Sprintf("o%d", len(mine))
				seq := ld.core.propose([]byte(d), 0)
				ld.waiting[seq] = d
				mine = append(mine, d)
			}
			s.process(ld)
			if s.rng.Intn(3) == 0 {
				s.proposeRandom()
			}
			s.stepOnce()
		}
		if ld.core.role != leader || ld.core.ballot != ballot {
			s.fatalf("leadership changed during the run; %s", s.describe())
		}
		s.heal()
		var got []string
		for _, c := range ld.sm.list {
			if c[0] == 'o' {
				got = append(got, string(c))
			}
		}
		if len(got) != len(mine) {
			s.fatalf("applied %d of the leader's %d commands", len(got), len(mine))
		}
		for i := range got {
			if got[i] != mine[i] {
				s.fatalf("leader's commands applied out of order at %d: %s, want %s", i, got[i], mine[i])
			}
		}
		s.close()
		if *flagSeed >= 0 {
			break
		}
	}
}

// checkHistories: every node's membership history is a prefix of the
// longest one (all nodes agree on every configuration), and each change
// adds or removes exactly one member once the previous one is active.
func (s *sim) checkHistories() {
	var longest *history
	for _, id := range s.ids {
		if h := s.nodes[id].core.hist; h != nil && (longest == nil || len(h.items) > len(longest.items)) {
			longest = h
		}
	}
	for _, id := range s.ids {
		h := s.nodes[id].core.hist
		if h == nil {
			continue
		}
		for k, it := range h.items {
			o := longest.items[k]
			if it.Index != o.Index || !slices.Equal(it.IDs(), o.IDs()) {
				s.fatalf("node %d: membership item %d is %d:%v, another node has %d:%v", id, k, it.Index, it.IDs(), o.Index, o.IDs())
			}
		}
	}
	for k := 1; k < len(longest.items); k++ {
		a, b := longest.items[k-1], longest.items[k]
		if b.Index < a.Active || b.Active != b.Index+Alpha || diffOne(a.Members, b.Members) != nil {
			s.fatalf("bad membership step %v -> %v", a, b)
		}
	}
	s.changes += len(longest.items) - 1
}

// TestSimFoundSeeds replays the seeds a 3000-seed run failed on
// (beyond make test's 500), so they stay covered in every run:
//   - 364: a leader's deferred phase-1 value at an index a snapshot had
//     just decided was proposed again (a vote at or below the chosen
//     index, and an Early Accept claiming it chosen before its save);
//   - wal 31: a leader installed a snapshot over an index it had
//     proposed in the same Ready and stayed leader;
//   - membership 289: a node removed by the latest change it knew never
//     asked for the log, so it never learned that it had been added back
//     (the new leader was a stranger to it);
//   - learners 614 (with 289's fix): a leader proposed instances up to
//     chosen+Alpha while a change chosen in the same step was not recorded
//     yet (checkHorizon), so it counted their quorum among the old voters
//     and one waited forever for a removed node's vote.
//
// They pass since proposeAt refuses chosen indexes, a leader steps down
// when a snapshot covers its own unchosen proposals, a removed node still
// fetches, and the horizon is applied+Alpha.
func TestSimFoundSeeds(t *testing.T) {
	faults := func(seed int64, o simOpts) {
		s := newSim(t, seed, o)
		s.faulty = true
		s.faults()
		s.heal()
		s.close()
	}
	o := simOpts{nodes: 3, steps: 4000, drop: 0.1, dup: 0.05, partitions: true, crashes: true, campaigns: true, compact: true}
	faults(364, o)
	o.useWAL, o.steps = true, 2000
	runSim(t, 31, o)
	m := simOpts{nodes: 3, spares: 2, changes: true, steps: 12000, drop: 0.1, dup: 0.05, partitions: true, crashes: true, campaigns: true}
	faults(289, m)
	m.learners = true
	faults(614, m)
}
