package rolectl

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
)

var (
	simSeeds = flag.Int("rolectl-seeds", 300, "number of seeds for TestSimRoles")
	simSeed  = flag.Uint64("rolectl-seed", 0, "run only this seed (0: all)")
)

// The simulation runs three controllers, each with a fake MariaDB and a
// fake capture, under one seeded PRNG. A lease oracle grants terms the way
// masterlease does (a new holder only once no node sees itself master) and
// takes them away; MariaDBs crash and restart; captures fail; commits
// arrive at whatever MariaDB is writable and wait for an ACK that only the
// capture of the current term gives; nodes step down, are marked unsafe,
// shut down and start again; results of actions and capture failures are
// delivered late, possibly after the term they belong to. After every step
// it checks: at most one writable MariaDB, and only on a node whose own
// view is a ready lease for the epoch its writes were opened in; never a
// writable MariaDB that is still relaxed; never a graceful stop with
// commits waiting; never semi-sync off, a graceful stop or a handoff while
// a commit may be waiting or the binlog holds a GTID the log lacks.
//
// The fake MariaDB follows what 10.11 was measured to do (doc.go): a
// commit passes its read_only check, is written to the binlog (window),
// and only then waits for the ACK (waiting, what the count sees); read_only
// on completes only when no commit is in flight (else it times out and
// stays off); semi-sync off releases every waiting commit with OK; KILL
// QUERY releases one with OK too (ahead: in the binlog, not in the log).

type simDB struct {
	up, readOnly, relaxed bool
	semiSync              bool
	openEpoch             uint64 // epoch for which read_only was turned off
	window                int    // past the read_only check, not yet counted as waiting
	waiting               int    // in the semi-sync wait (Rpl_semi_sync_master_wait_sessions)
	ahead                 int    // commits in the binlog the log does not hold
}

// barrier is SET read_only=ON: it completes only with nothing in flight.
func (d *simDB) barrier() bool {
	if !d.up || d.window+d.waiting > 0 {
		return false
	}
	d.readOnly = true
	return true
}

// quiet is CheckQuiet: the barrier, a zero count, the binlog in the log.
func (d *simDB) quiet() bool { return d.barrier() && d.waiting == 0 && d.ahead == 0 }

type simNode struct {
	id         int
	st         State
	db         simDB
	capOn      bool
	capEpoch   uint64
	view       Obs // the lease part of the node's observation
	unsafe     bool
	caughtUp   bool
	stopped    bool // shut down; restarts later with Initial
	late       []Event
	promotions int
	aborts     int  // switchovers that quiesced and later gave up (SwitchoverAborted)
	handedOff  bool // the stop left MariaDB running for the next start
	handoffs   int
}

type sim struct {
	t           *testing.T
	rng         *rand.Rand
	nodes       []*simNode
	epoch       uint64 // the log's current epoch
	holder      int    // -1: none
	failPromote float64
	log         []string
	bad         string
}

func (s *sim) logf(format string, args ...any) {
	s.log = append(s.log, fmt.Sprintf(format, args...))
	if len(s.log) > 60 {
		s.log = s.log[1:]
	}
}

func (s *sim) obs(n *simNode) Obs {
	o := n.view
	o.MySQLUp = n.db.up
	o.Unsafe = n.unsafe
	o.CaughtUp = n.caughtUp
	return o
}

// feed steps node n with ev and carries out the actions like the driver
// does, feeding results back before anything else happens.
func (s *sim) feed(n *simNode, ev Event) {
	queue := []Event{ev}
	for len(queue) > 0 && s.bad == "" {
		ev := queue[0]
		queue = queue[1:]
		prev := n.st
		var acts []Action
		n.st, acts = Step(n.st, ev)
		s.logf("n%d %s + %T%+v -> %s %v", n.id, prev, ev, ev, n.st, acts)
	batch:
		for _, a := range acts {
			switch a.Kind {
			case LeadPaxos:
			case MakeDurable:
				if !n.db.up || s.rng.Float64() < s.failPromote {
					queue = append(queue, PromoteFailed{Epoch: n.st.Epoch, Why: "make durable"})
					break batch
				}
				n.db.relaxed = false
			case OpenWrites:
				if !n.db.up || s.rng.Float64() < s.failPromote {
					queue = append(queue, PromoteFailed{Epoch: a.Epoch, Why: "open writes", Unsafe: s.rng.IntN(4) == 0})
					break batch
				}
				n.db.readOnly, n.db.openEpoch, n.db.semiSync = false, a.Epoch, true
				n.promotions++
			case StartCapture:
				if !n.db.up || s.rng.Float64() < s.failPromote {
					queue = append(queue, PromoteFailed{Epoch: a.Epoch, Why: "start capture"})
					break batch
				}
				n.capOn, n.capEpoch = true, a.Epoch
			case SetReadOnly:
				n.db.barrier() // times out, writable still, while commits are in flight
			case StopCapture:
				n.capOn = false
			case CountWaiting:
				queue = append(queue, Waiting{Purpose: a.Purpose, N: n.db.waiting, Known: n.db.up && s.rng.IntN(10) != 0})
			case Kill:
				s.crash(n)
			case Fence:
				s.fence(n)
			case MarkUnsafe:
				n.unsafe = true
			case KeepReplica:
				// role.BecomeReplica: read_only first, and it refuses a
				// server whose semi-sync master is still on.
				if n.db.barrier() && !n.db.semiSync {
					n.db.relaxed = true
				}
			case CheckQuiet:
				queue = append(queue, Quiet{Purpose: a.Purpose, Proven: n.db.quiet() && s.rng.IntN(10) != 0})
			case Release:
				ok := n.db.quiet() && s.rng.IntN(10) != 0
				if ok {
					s.semiSyncOff(n)
				}
				queue = append(queue, Released{OK: ok})
			case AwaitDrained:
				if s.rng.IntN(2) == 0 {
					n.db.waiting = 0 // acknowledged meanwhile
				}
			case Handoff:
				// The driver makes it a read-only replica and leaves it
				// running; the next start adopts it as it is.
				if n.db.up && (n.db.waiting+n.db.window+n.db.ahead > 0 || n.capOn || n.db.semiSync) {
					s.bad = fmt.Sprintf("n%d: handed off %+v (capture on %v)", n.id, n.db, n.capOn)
				}
				n.db.readOnly = true
				n.handedOff = n.db.up
			case GracefulStop:
				if n.db.up && n.db.waiting+n.db.window+n.db.ahead > 0 {
					s.bad = fmt.Sprintf("n%d: graceful stop with commits in flight or not in the log: %+v", n.id, n.db)
				}
				n.db.up, n.capOn = false, false
			default:
				s.bad = fmt.Sprintf("unknown action %v", a)
			}
		}
	}
	s.check()
}

// semiSyncOff releases every waiting commit with OK: never while one may
// be in flight or the binlog holds what the log lacks.
func (s *sim) semiSyncOff(n *simNode) {
	if n.db.waiting+n.db.window+n.db.ahead > 0 {
		s.bad = fmt.Sprintf("n%d: semi-sync off with commits in flight or not in the log: %+v", n.id, n.db)
	}
	n.db.semiSync = false
}

func (s *sim) crash(n *simNode) {
	if n.capOn { // capture notices the dead server, later
		n.late = append(n.late, CaptureStopped{Epoch: n.capEpoch, Why: "EOF"})
	}
	n.db = simDB{readOnly: true} // restarts durable and read-only (my.cnf); waiting commits cut
}

func (s *sim) fence(n *simNode) {
	if s.holder == n.id {
		s.epoch++
		s.holder = -1
		n.view = Obs{LeaseEpoch: s.epoch}
		n.late = append(n.late, Observed{s.obs(n)})
	}
}

func (s *sim) check() {
	if s.bad != "" {
		return
	}
	writable := 0
	for _, n := range s.nodes {
		if !n.db.up || n.db.readOnly {
			continue
		}
		writable++
		switch {
		case !n.view.LeaseMaster:
			s.bad = fmt.Sprintf("n%d: read_only off without a valid lease", n.id)
		case n.view.LeaseEpoch != n.db.openEpoch:
			s.bad = fmt.Sprintf("n%d: writable for epoch %d in epoch %d", n.id, n.db.openEpoch, n.view.LeaseEpoch)
		case n.db.relaxed:
			s.bad = fmt.Sprintf("n%d: writable while relaxed", n.id)
		}
	}
	if writable > 1 {
		s.bad = fmt.Sprintf("%d writable MariaDBs", writable)
	}
}

func (s *sim) run(steps int) {
	for i := 0; i < steps && s.bad == ""; i++ {
		n := s.nodes[s.rng.IntN(len(s.nodes))]
		if n.stopped {
			if s.rng.IntN(20) == 0 {
				n.stopped = false
				n.st = Initial(true)
				n.unsafe = false
				if n.handedOff {
					// Adopted as it was left: it must still be read-only
					// with nothing waiting (the real adoption checks so).
					if !n.db.up || !n.db.readOnly || n.db.waiting > 0 {
						s.bad = fmt.Sprintf("n%d: adopting %+v", n.id, n.db)
					}
					n.handoffs++
				} else {
					n.db = simDB{up: true, readOnly: true}
				}
				n.handedOff = false
				s.feed(n, Observed{s.obs(n)})
			}
			continue
		}
		switch r := s.rng.IntN(100); {
		case r < 10: // the lease oracle grants a term
			anyView := false
			for _, m := range s.nodes {
				anyView = anyView || m.view.LeaseMaster
			}
			if anyView || n.unsafe || !n.db.up {
				continue
			}
			s.epoch++
			s.holder = n.id
			n.caughtUp = s.rng.IntN(10) != 0
			n.view = Obs{LeaseMaster: true, LeaseEpoch: s.epoch}
			for _, m := range s.nodes {
				if m != n {
					m.view = Obs{LeaseEpoch: s.epoch}
				}
			}
			s.feed(n, Observed{s.obs(n)})
		case r < 18: // the holder's own view expires
			if s.holder == n.id && n.view.LeaseMaster {
				n.view.LeaseMaster = false
				s.feed(n, Observed{s.obs(n)})
			}
		case r < 24: // mariadbd crashes
			if n.db.up {
				s.crash(n)
				s.feed(n, Observed{s.obs(n)})
			}
		case r < 32: // the supervisor restarts it
			if !n.db.up {
				n.db = simDB{up: true, readOnly: true}
				s.feed(n, Observed{s.obs(n)})
			}
		case r < 36: // capture fails on its own
			if n.capOn {
				n.capOn = false
				n.late = append(n.late, CaptureStopped{Epoch: n.capEpoch, Why: "error", Unsafe: s.rng.IntN(5) == 0})
			}
		case r < 46: // commits arrive: past read_only, into the binlog
			if n.db.up && !n.db.readOnly {
				k := 1 + s.rng.IntN(3)
				n.db.window += k
				n.db.ahead += k
			}
		case r < 50: // they reach the semi-sync wait (or return at once, semi-sync off)
			if n.db.semiSync {
				n.db.waiting += n.db.window
			}
			n.db.window = 0
		case r < 59: // capture of the current term ACKs the waiting ones
			if n.capOn && n.capEpoch == s.epoch && s.holder == n.id {
				n.db.ahead -= n.db.waiting
				n.db.waiting = 0
			}
		case r < 60: // a client's KILL QUERY returns a waiting commit OK
			if n.db.waiting > 0 {
				n.db.waiting--
				if n.capOn { // capture's monitor sees Rpl_semi_sync_master_no_tx grow
					n.late = append(n.late, CaptureStopped{Epoch: n.capEpoch, Why: "no_tx grew", Unsafe: true})
				}
			}
		case r < 62:
			s.feed(n, StepDown{Why: "switchover"})
		case r < 63: // a switchover quiesces (the admin's read_only on) and will give up later
			if n.db.up {
				n.db.barrier()
				n.late = append(n.late, SwitchoverAborted{})
				n.aborts++
			}
		case r < 72:
			s.feed(n, Repoint{s.obs(n)})
		case r < 85:
			s.feed(n, Observed{s.obs(n)})
		case r < 92: // a late event
			if len(n.late) > 0 {
				k := s.rng.IntN(len(n.late))
				ev := n.late[k]
				n.late = append(n.late[:k], n.late[k+1:]...)
				if _, ok := ev.(SwitchoverAborted); ok {
					// The driver observes under its lock when it steps.
					ev = SwitchoverAborted{s.obs(n)}
				}
				s.feed(n, ev)
			}
		case r < 93:
			n.unsafe = true
			s.feed(n, Observed{s.obs(n)})
		case r < 95: // shutdown; half of them restarts that hand MariaDB off
			s.feed(n, Shutdown{Handoff: s.rng.IntN(2) == 0})
			if s.holder == n.id {
				n.view.LeaseMaster = false
			}
			n.stopped = true
			n.capOn = false
			n.late = nil
			if !n.handedOff {
				n.db.up = false
			} else if s.rng.IntN(4) == 0 {
				// Commits arrive while no binlogd runs: read_only refuses
				// them (only the OS admin could write).
				if !n.db.readOnly {
					n.db.waiting++
				}
			}
		}
	}
}

func TestSimRoles(t *testing.T) {
	seeds := []uint64{}
	if *simSeed != 0 {
		seeds = append(seeds, *simSeed)
	} else {
		for i := 1; i <= *simSeeds; i++ {
			seeds = append(seeds, uint64(i))
		}
	}
	promotions, handoffs, aborts := 0, 0, 0
	for _, seed := range seeds {
		s := &sim{t: t, rng: rand.New(rand.NewPCG(seed, 0x501e)), holder: -1, failPromote: 0.1}
		for i := 1; i <= 3; i++ {
			n := &simNode{id: i - 1, st: Initial(true), db: simDB{up: true, readOnly: true}}
			s.nodes = append(s.nodes, n)
		}
		s.holder = -1
		s.run(3000)
		if s.bad != "" {
			for _, l := range s.log {
				t.Log(l)
			}
			t.Fatalf("seed %d: %s (rerun with -rolectl-seed=%d)", seed, s.bad, seed)
		}
		for _, n := range s.nodes {
			promotions += n.promotions
			handoffs += n.handoffs
			aborts += n.aborts
		}
	}
	if handoffs == 0 {
		t.Fatal("no MariaDB was handed off and adopted in any seed")
	}
	// The run must have exercised promotions, or it proved nothing.
	if promotions < len(seeds) {
		t.Fatalf("only %d promotions in %d seeds", promotions, len(seeds))
	}
	if aborts == 0 {
		t.Fatal("no switchover was aborted in any seed")
	}
	t.Logf("%d seeds, %d promotions, %d handoffs adopted, %d switchovers aborted", len(seeds), promotions, handoffs, aborts)
}
