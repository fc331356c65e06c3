package paxos

import (
	"math/bits"
	"math/rand"
	"slices"
	"sort"

	"phxgo/wal"
)

// The core is the whole protocol as a deterministic step machine: no
// goroutines, clock, network or disk. Inputs: step (a peer message), tick
// (one unit of logical time), propose/abandon (local commands), flush (the
// batch linger expired). Output: ready(), a Ready to persist, send and apply
// in that order. Reads of already-durable entries (to answer a Fetch below
// the applied index) go through logReader, which the driver keeps durable
// before the next input.

type role uint8

const (
	follower role = iota
	candidate
	leader
)

func (r role) String() string { return [...]string{"follower", "candidate", "leader"}[r] }

// coreConfig is the core's view of Config, in ticks.
type coreConfig struct {
	ID              uint32
	Peers           []uint32          // initial members, including ID (Join: the seeds)
	Addrs           map[uint32]string // initial members' addresses
	Learners        []uint32          // initial members that are learners
	Join            bool              // learn the members from the seeds (Meta empty)
	Meta            []byte            // persisted membership history, if any
	ElectionTicks   int               // follower waits [E, 2E) ticks without a leader message
	HeartbeatTicks  int
	RetransmitTicks int // resend unanswered Prepare/Accept/Fetch
	RetryTicks      int // re-forward a pending command to the same leader
	Window          int // instances in flight at the leader
	Thrifty         bool
	BatchMaxBytes   int
	FetchMaxBytes   int
	MaxValueBytes   int    // 0: DefaultConfig's
	MaxIndexAhead   uint64 // 0: DefaultMaxIndexAhead
	Seed            int64
	SeqStart        uint64 // first command seq of this incarnation
}

// logReader reads durable instances (the wal, or MemoryStorage).
type logReader interface {
	Range(from, to uint64, maxBytes int) ([]wal.Accepted, error)
}

// Ready is the core's output. The driver may send Early at once; then, in
// this order and after every earlier Ready's Update is durable:
//  1. persist Update with ONE durable Storage.Save; several consecutive
//     Readys may share one Save (group commit). An Update that only raises
//     Chosen may be saved after step 3: Committed depends only on accepts
//     made durable by earlier Saves. Update.NoSync marks an Update without
//     a promise or a vote (only NoVote instances, see MsgAccept): it needs
//     to be durable only once a later synced Save is;
//  2. apply Committed in order (every entry is chosen and durable);
//  3. send Messages only once Update is durable (an acceptor answers only
//     after its promise or accept is durable). A chosen index may be
//     announced before it is durable: it is knowledge derived from a
//     majority's durable accepts, which a restarted node relearns, and
//     wal.Log does not sync an Update that only raises Chosen;
//  4. call rawNode.Advance(last Committed index).
//
// persist.go does all four, for Node and the simulation alike.
//
// Early holds only messages that claim nothing about state not yet
// durable: the leader's proposals (a follower may accept before the
// leader's own accept is durable) and a follower's Forwards. The leader
// counts its own vote at once, so a proposal's Accept carries as its
// chosen index only stable, which Advance raised once the saves holding
// the leader's accepts up to it were durable; a chosen index above that
// leaves through Messages or Committed of a later Ready, i.e. after its
// own accept is durable (the simulation checks every Early Accept). Prepares never go early: a ballot is durable
// before anyone sees it, so a restarted node never reuses one.
type Ready struct {
	// Install, if set, goes first: durable before Update, applied after
	// every earlier Ready's Committed (snapshot_install.go).
	Install *InstalledSnapshot
	Update  wal.Update
	// Meta, when set, is the new membership history: persist it before
	// applying Committed (it reflects changes chosen in Committed).
	Meta      []byte
	Early     []Message
	Messages  []Message
	Committed []Entry

	// For the driver alone, not persisted: Members, when set, is the new
	// membership view (publish it, point the transport at its targets);
	// Linger asks for the batch linger to run, ending in Flush.
	Members *memberView
	Linger  bool
}

func (rd *Ready) needsPersist() bool {
	return rd.Update.Promised != nil || len(rd.Update.Accepted) > 0
}

// needsSync reports whether Update holds a promise or a vote, which must
// be durable before Messages leave; the rest (NoVote instances, a chosen
// index) may be saved without a sync of its own (wal.Update.NoSync).
func (rd *Ready) needsSync() bool {
	return rd.Update.Promised != nil || (len(rd.Update.Accepted) > 0 && !rd.Update.NoSync)
}

func (rd *Ready) empty() bool {
	return rd.Install == nil && !rd.needsPersist() && rd.Update.Chosen == 0 && len(rd.Early) == 0 && rd.Meta == nil &&
		len(rd.Messages) == 0 && len(rd.Committed) == 0
}

// instance is one log slot above the applied index.
type instance struct {
	ballot   Ballot // accepted ballot here; zero = nothing accepted
	value    []byte
	chosen   bool
	proposed bool   // leader: proposed under c.ballot
	votes    uint64 // leader: peers (by position) that accepted under c.ballot
	spare    uint64 // leader: peers (by position) sent it NoVote, not yet asked to vote
	ackMark  uint64 // leader: c.ackSeq when it was proposed
	sentTick int64
	resends  uint8 // leader: retransmits so far (each waits twice as long)
	// voted: the ballot this node voted for here (its accept was saved
	// with a sync; a NoVote store is not): a repeated Accept at that
	// ballot needs no new save.
	voted Ballot
}

// pendingCmd is a command this node proposed that is not applied yet.
type pendingCmd struct {
	enc      []byte
	sent     bool
	sentTo   uint32
	sentTick int64
}

type core struct {
	// Counters for monitoring (Status): values this node proposed as
	// leader, the commands and bytes they carried, leader changes seen.
	valuesProposed, cmdsProposed, bytesProposed, leaderChanges uint64
	// dropped counts peer messages refused by admit, by reason;
	// lastDrop is the latest, for the driver's rate-limited log.
	dropped  [NumDropReasons]uint64
	lastDrop dropNote
	// stepDowns counts this node's step-downs as leader by cause
	// (stepdown.go); lastStepDown is the latest, for the driver's log.
	// leaderTimeouts counts the times it stopped believing in a leader it
	// had heard (its election timeout ran out); lostLeader is the latest.
	stepDowns      [NumStepDownCauses]uint64
	lastStepDown   stepDown
	leaderTimeouts uint64
	lostLeader     uint32
	// stuckPromise: the persisted promise is above MaxRound (a forged
	// message before hostile input was checked). The node keeps it (it
	// must never forget a promise), so it can neither vote nor lead again;
	// it still learns and applies the log (see doc.go, "Hostile input").
	stuckPromise bool
	// exhausted: this node's rounds reached MaxRound; it no longer
	// campaigns (nextRound).
	exhausted bool

	lim msgLimits

	cfg     coreConfig
	id      uint32
	peers   []uint32
	peerPos map[uint32]int // position in peers: every node id known, append-only
	rng     *rand.Rand
	reader  logReader

	// Acceptor and learner state. Invariant: applied <= chosen, and every
	// index in (applied, chosen] is in log with chosen set.
	promised Ballot
	chosen   uint64
	applied  uint64               // highest index handed out in Ready.Committed
	stable   uint64               // highest index applied and durable (compact)
	log      map[uint64]*instance // Invariant: every key > stable
	last     uint64               // highest key of log (or applied)
	// maxRound is the highest round seen anywhere, a hint for our next
	// ballot. Invariant: maxRound <= MaxRound (inputs are checked, and
	// one above reach only raises it to reach: see admit).
	maxRound uint64

	role   role
	leader uint32 // 0 = unknown
	ballot Ballot // our ballot as candidate or leader

	// membership (core_membership.go). hist is nil while joining.
	hist      *history
	masks     map[uint64]uint64 // Membership.Index -> vote mask
	targets   []uint32          // nodes to talk to, self excluded
	targetsAt uint64            // chosen index targets were computed at
	// targetsDirty: targets changed since the driver last looked (it
	// points the transport at them).
	targetsDirty bool
	metaDirty    bool
	leadVotes    uint64            // leader: positions that promised c.ballot
	deferred     map[uint64][]byte // leader: phase-1 values beyond the horizon
	deferFrom    uint64
	deferTo      uint64

	// candidate
	promises    map[uint32]Message
	prepareFrom uint64
	prepareTick int64
	prepareSent int // Prepare rounds sent in this phase 1 (prepareDue)
	// forMembers: this phase 1 is a leader's own, run again because new
	// members govern its next instance (canLead); canPropose takes
	// commands meanwhile.
	forMembers bool

	// probe (follower) and campaign (see core_election.go)
	probing      bool
	probeBallot  Ballot
	probeVotes   uint64 // peers (by position) that granted the probe
	campaigning  bool
	odd          bool   // core_odd.go: never leads, serves no fetch
	campaignWait int    // ticks until a campaigning follower retries (0 = none)
	terms        uint64 // leaderships won by this core

	// leader
	next       uint64 // next index to propose
	queue      [][]byte
	queueBytes int
	flush      bool
	acceptBuf  []Entry
	// spareBuf (by peer id): NoVote Accepts held until their instances
	// are chosen or the pipeline empties (flushSpares).
	spareBuf   map[uint32][]Entry
	chosenSent uint64 // highest chosen index announced to followers
	// chosenSaved: the highest chosen index handed to storage in an Update
	// (saveChosenLazily).
	chosenSaved uint64
	// Thrifty voter choice: every vote received bumps ackSeq; ackAt (by
	// peer position) is the ackSeq of the peer's latest vote.
	ackSeq uint64
	ackAt  []uint64
	// voterSet (positions, self excluded): the followers asked to vote on
	// instances governed by voterCfg (pickVoters).
	voterSet uint64
	voterCfg *Membership
	suspect  uint64 // voters dropped as silent, until they vote again

	// timers (ticks)
	tick             int64
	electionElapsed  int
	electionTimeout  int
	heartbeatElapsed int
	lastHeard        []int64 // by peer position
	emptyAnswered    int64   // follower: tick of its last answer to an Accept without entries

	// learner catch-up
	fetching   bool
	fetchTick  int64
	fetchMiss  int    // fetches in a row that expired unanswered (fetchExpired)
	joinAsked  int64  // tick of a joining node's last ask for the members
	peerChosen uint64 // highest chosen index a peer reported
	fetchFrom  uint32 // the peer that reported it
	// asked counts the Fetches sent to each peer and not answered yet. A
	// Learn is taken only from a peer with one outstanding, and uses it
	// up: entries in a Learn are stored as chosen, so one sent unasked
	// with a member's key (or by a bug) rewrote this node's log without
	// any quorum (red-team test, session 37). A Fetch that expired stays
	// counted: its late answer is still taken.
	asked map[uint32]int

	// own proposals
	seq     uint64
	pending map[uint64]*pendingCmd
	// Forward batching (follower): forwardBuf leaves at once if fwdIdle
	// (no Forward sent since the last linger or tick), else when the
	// linger ends (flushBatch) or it reaches BatchMaxBytes, so a busy
	// follower sends one Forward per linger, like the leader's batches.
	forwardBuf   [][]byte
	forwardBytes int
	fwdIdle      bool

	// Ready being built
	msgs    []Message
	early   []Message
	upd     wal.Update
	updSync bool // upd holds a promise or a vote: it must be synced
	accPos  map[uint64]int
	install *InstalledSnapshot
}

func newCore(cfg coreConfig, hs wal.HardState, entries []wal.Accepted, reader logReader) *core {
	peers := append([]uint32(nil), cfg.Peers...)
	sort.Slice(peers, func(i, j int) bool { return peers[i] < peers[j] })
	c := &core{
		cfg:           cfg,
		id:            cfg.ID,
		peers:         peers,
		peerPos:       make(map[uint32]int, len(peers)),
		asked:         map[uint32]int{},
		masks:         make(map[uint64]uint64),
		rng:           rand.New(rand.NewSource(cfg.Seed)),
		reader:        reader,
		promised:      hs.Promised,
		chosen:        hs.Chosen,
		chosenSaved:   hs.Chosen,
		applied:       hs.Applied,
		stable:        hs.Applied,
		log:           make(map[uint64]*instance),
		maxRound:      min(hs.Promised.Round, MaxRound),
		stuckPromise:  hs.Promised.Round > MaxRound,
		seq:           cfg.SeqStart,
		pending:       make(map[uint64]*pendingCmd),
		accPos:        make(map[uint64]int),
		fwdIdle:       true,
		deferFrom:     1,
		emptyAnswered: -1,
	}
	for i, p := range peers {
		c.peerPos[p] = i
	}
	c.lim = coreLimits(cfg)
	c.lastHeard = make([]int64, len(peers))
	c.ackAt = make([]uint64, len(peers))
	c.initHistory()
	c.last = c.applied
	for _, a := range entries {
		if a.Index <= c.applied || a.Index > MaxIndex {
			// Above MaxIndex: a forged Accept stored before inputs were
			// checked; no leader proposes there (restore logs it).
			continue
		}
		c.log[a.Index] = &instance{ballot: a.Ballot, value: a.Value, chosen: a.Index <= c.chosen}
		c.last = max(c.last, a.Index)
		if a.Ballot.Round <= MaxRound {
			// (A round above it came from a forged message; the promise
			// decides whether this node is stuck, see stuckPromise.)
			c.maxRound = max(c.maxRound, a.Ballot.Round)
		}
	}
	for i := c.applied + 1; i <= c.chosen; i++ {
		if c.log[i] == nil {
			panic("paxos: storage lacks a chosen entry above the applied index")
		}
		c.recordChosen(i, c.log[i].value)
	}
	c.refreshTargets()
	c.becomeFollower(0)
	return c
}

// ---- inputs ----

// step processes one peer message. A message that fails admit is
// dropped whole and counted (core_validate.go).
func (c *core) step(m Message) {
	if err := c.admit(&m); err != nil {
		c.drop(&m, err)
		return
	}
	if err := c.learnerVote(&m); err != nil {
		c.drop(&m, err)
		return
	}
	if m.Type == MsgLearn {
		if c.asked[m.From] == 0 {
			c.drop(&m, badMsg(DropUnasked, "entries from node %d, which was not asked for any", m.From))
			return
		}
		if c.asked[m.From]--; c.asked[m.From] == 0 { // one answer per Fetch
			delete(c.asked, m.From)
		}
	}
	pos := c.peerPos[m.From]
	if m.Type == MsgPrepare && !c.votesFrom(m.From) {
		// A non-member (or a node we cannot judge yet) may not disturb
		// us; the reply's chosen index lets a removed node learn so.
		if c.hist != nil {
			c.send(Message{Type: MsgPromise, To: m.From, Ballot: m.Ballot, Probe: m.Probe, Reject: true, Promised: c.promised, Chosen: c.chosen})
		}
		return
	}
	c.lastHeard[pos] = c.tick
	if m.Chosen > c.peerChosen && (m.Type == MsgAccept || m.Type == MsgAccepted || m.Type == MsgLearn || m.Type == MsgPromise || m.Type == MsgPrepare) {
		c.peerChosen, c.fetchFrom = m.Chosen, m.From
	}
	c.maxRound = max(c.maxRound, min(max(m.Ballot.Round, m.Promised.Round), c.roundReach()))
	switch m.Type {
	case MsgPrepare:
		if m.Probe {
			c.onProbe(m)
		} else {
			c.onPrepare(m)
		}
	case MsgPromise:
		if m.Probe {
			c.onProbeReply(m)
		} else if c.role == candidate && m.Ballot == c.ballot {
			c.onPromise(m)
		}
	case MsgAccept:
		c.onAccept(m)
	case MsgAccepted:
		c.onAccepted(m)
	case MsgFetch:
		c.onFetch(m)
	case MsgLearn:
		c.onLearn(m)
	case MsgSnapshot:
		c.onSnapshot(m)
	case MsgForward:
		if c.role == leader {
			for _, cmd := range m.Cmds {
				if validCommand(cmd) {
					c.enqueue(cmd)
				}
			}
			c.maybePropose()
		}
	}
}

// tickOnce advances logical time by one tick.
func (c *core) tickOnce() {
	c.tick++
	c.fwdIdle = true
	switch c.role {
	case follower:
		c.electionElapsed++
		if c.campaignWait > 0 {
			// A campaigning node's backoff runs even while it hears a
			// leader (that leader is the one it wants to replace).
			if c.campaignWait--; c.campaignWait == 0 && c.campaigning {
				c.startElection()
				break
			}
		}
		if c.electionElapsed >= c.electionTimeout {
			c.electionTimedOut()
		}
	case candidate:
		c.electionElapsed++
		if c.electionElapsed >= c.electionTimeout {
			c.electionTimedOut()
		} else if c.prepareDue() {
			c.sendPrepares()
		}
	case leader:
		c.checkRemoved()
		if c.role != leader {
			break
		}
		if !c.hasQuorum() {
			c.leaveLead(StepDownQuorumSilent, 0, Ballot{})
			break
		}
		c.heartbeatElapsed++
		c.retransmitAccepts()
		if c.heartbeatElapsed >= c.cfg.HeartbeatTicks {
			c.heartbeatElapsed = 0
			c.broadcast(Message{Type: MsgAccept, Ballot: c.ballot, Chosen: c.chosen})
		}
		c.flush = true
		c.maybePropose()
	}
	if c.fetching && c.fetchExpired() {
		c.fetching = false
		// The peer asked may be dead, and while nothing new is chosen no
		// one reports more than it did: ask the next peer
		// (TestFetchTurnsFromADeadPeer).
		c.fetchFromNext()
	}
	c.joinTick()
	if c.peerChosen > c.chosen {
		c.maybeFetch(c.fetchFrom)
	}
	c.retryPending()
}

// propose adds a local command and returns its seq.
func (c *core) propose(data []byte, flags byte) uint64 {
	seq := c.seq
	c.seq++
	minPending := seq
	for s := range c.pending {
		minPending = min(minPending, s)
	}
	enc := appendCommand(make([]byte, 0, len(data)+24), command{
		Node: c.id, Seq: seq, MinPending: minPending, Flags: flags, Data: data,
	})
	p := &pendingCmd{enc: enc}
	c.pending[seq] = p
	c.sendPending(p)
	c.maybePropose()
	return seq
}

// abandon forgets a local command whose caller gave up: it may still be
// chosen (and applied, or dropped as finished by the dedup rule).
func (c *core) abandon(seq uint64) { delete(c.pending, seq) }

// flushBatch ends the batch linger: queued commands go out now, and
// held forwards with the next Ready.
func (c *core) flushBatch() {
	c.fwdIdle = true
	if c.role == leader && len(c.queue) > 0 {
		c.flush = true
		c.maybePropose()
	}
}

// lingering reports whether the driver should run the linger timer: the
// leader has queued commands, or a follower sent a Forward since the
// last linger (it holds further ones until then).
func (c *core) lingering() bool {
	return (c.role == leader && len(c.queue) > 0) || !c.fwdIdle
}

func (c *core) dropForwards() { c.forwardBuf, c.forwardBytes = nil, 0 }

// canPropose reports whether this node heard from a quorum (itself
// included) recently, or a leader it follows, or it is the leader running
// phase 1 again for new members; if not, a new command is refused with
// ErrNoQuorum before it leaves the node.
//
// Why the last: that phase 1 is the leader's own, planned at a change's
// activation, and its promises are what judge the new members. Judged
// by hasQuorum instead (what this node heard from them in the last 2E
// ticks), commands were refused: in CI binlogd's master had a batch
// refused while that phase 1 ran (it won 3 ms later), stopped capture and
// stepped down, so the promotion became a failover (e2e TestLearner;
// TestSimPromotionKeepsTakingCommands). A command taken meanwhile waits
// in pending like any other: it is proposed when the node leads again,
// or sent to whoever leads instead.
func (c *core) canPropose() bool {
	if c.role != leader && c.leader != 0 && c.electionElapsed < 2*c.cfg.ElectionTicks {
		return true
	}
	if c.role == candidate && c.forMembers {
		return true
	}
	return c.hasQuorum()
}

// hasQuorum reports whether this node heard, within the last 2E ticks, a
// majority of the voters that govern the next instance to be chosen.
// Not the latest configuration: a change chosen less than Alpha
// instances ago governs nothing yet, and its new voter may not have been
// heard (a learner being promoted that is restarting, say). Counting it
// made a leader that heard two of three voters step down the moment it
// applied a promotion, 64 instances before the fourth voter counted for
// anything (e2e TestLearner, TestSimPromotionLeadsUntilActive).
func (c *core) hasQuorum() bool {
	if c.hist == nil {
		return false
	}
	var heard uint64
	for i, p := range c.peers {
		if p == c.id || c.tick-c.lastHeard[i] < int64(2*c.cfg.ElectionTicks) {
			heard |= 1 << i
		}
	}
	return c.isQuorum(heard, c.cfgAt(c.chosen+1))
}

// ---- output ----

func (c *core) ready() Ready {
	if len(c.acceptBuf) > 0 {
		c.sendProposals()
	}
	notice := c.role == leader && c.chosen > c.chosenSent && c.inflight() == 0
	told := c.flushSpares()
	if notice {
		// A chosen notice of its own only when the pipeline empties:
		// while values are in flight, the next proposal's Accepts carry
		// the chosen index (sendProposals), saving two messages and a
		// follower's answer per value; the heartbeat announces it on
		// every tick whatever happens. A spare whose held entries just
		// left with the chosen index needs no notice.
		c.heartbeatElapsed = 0
		for _, p := range c.targets {
			if p != c.id && told&c.bit(p) == 0 {
				c.send(Message{Type: MsgAccept, To: p, Ballot: c.ballot, Chosen: c.chosen})
			}
		}
	}
	if len(c.forwardBuf) > 0 {
		switch {
		case c.leader == 0 || c.leader == c.id:
			c.dropForwards() // still pending: retryPending re-sends them
		case c.fwdIdle || c.forwardBytes >= c.cfg.BatchMaxBytes:
			// Early: a Forward claims nothing about our durable state.
			// retryPending may have queued every pending command: one
			// message each FetchMaxBytes, as for Accepts (chunkEntries).
			for _, part := range chunkBySize(c.forwardBuf, c.cfg.FetchMaxBytes, func(cmd []byte) int { return len(cmd) }) {
				c.early = append(c.early, Message{Type: MsgForward, From: c.id, To: c.leader, Cmds: part})
			}
			c.dropForwards()
			c.fwdIdle = false
		}
	}
	var committed []Entry
	// A joining node hands nothing out before it knows the members: it
	// could not record the changes among the entries.
	for c.hist != nil && c.applied < c.chosen {
		i := c.applied + 1
		inst := c.log[i]
		committed = append(committed, Entry{Index: i, Ballot: inst.ballot, Value: inst.value})
		c.applied = i
		c.recordChosen(i, inst.value)
		if cmds, err := decodeValue(inst.value); err == nil {
			for _, cmd := range cmds {
				if cmd.Node == c.id {
					delete(c.pending, cmd.Seq)
				}
			}
		}
	}
	if c.hist != nil && c.targetsAt != c.chosen && len(c.hist.items) > 1 {
		c.refreshTargets()
		c.checkRemoved()
	}
	c.saveChosenLazily()
	c.upd.NoSync = !c.updSync
	c.updSync = false
	rd := Ready{Install: c.install, Update: c.upd, Early: c.early, Messages: c.msgs, Committed: committed}
	c.install = nil
	if c.metaDirty && c.hist != nil {
		rd.Meta = c.hist.encode()
		c.metaDirty = false
	}
	if rd.Meta != nil || c.targetsDirty {
		c.targetsDirty = false
		rd.Members = c.memberView()
	}
	rd.Linger = c.lingering()
	c.upd = wal.Update{}
	c.msgs, c.early = nil, nil
	clear(c.accPos)
	return rd
}

// compact drops instances up to index from memory: the driver applied
// them and they are durable, so Fetch answers read them from storage.
func (c *core) compact(index uint64) {
	index = min(index, c.applied)
	for i := c.stable + 1; i <= index; i++ {
		delete(c.log, i)
	}
	c.stable = max(c.stable, index)
}

func (c *core) send(m Message) {
	m.From = c.id
	if m.Promised.Round > MaxRound {
		// A stuck promise (restored from before inputs were checked):
		// peers would drop the whole reply for it.
		m.Promised = Ballot{}
	}
	if m.Type == MsgAccept && m.Chosen > c.chosenSent {
		c.chosenSent = m.Chosen
	}
	c.msgs = append(c.msgs, m)
}

func (c *core) broadcast(m Message) {
	for _, p := range c.targets {
		if p != c.id {
			m.To = p
			c.send(m)
		}
	}
}

func (c *core) persistPromise(b Ballot) {
	if c.promised == b {
		return
	}
	if b.Less(c.promised) {
		panic("paxos: promised ballot moves backwards")
	}
	c.promised = b
	pb := b
	c.upd.Promised = &pb
	c.updSync = true
}

// persistAccepted records a vote: it must be durable before anyone hears
// of it (see Ready).
func (c *core) persistAccepted(a wal.Accepted) {
	c.updSync = true
	c.storeAccepted(a)
}

// storeAccepted records an accepted instance this node does not vote for
// (a NoVote Accept): written with the next Ready, synced only with a
// later vote or promise. Losing it in a crash loses no vote; keeping it
// reports a ballot no lower than any vote this node cast there, for a
// value its ballot's leader proposed, which phase 1 may take as usual.
func (c *core) storeAccepted(a wal.Accepted) {
	if k, ok := c.accPos[a.Index]; ok {
		c.upd.Accepted[k] = a
		return
	}
	c.accPos[a.Index] = len(c.upd.Accepted)
	c.upd.Accepted = append(c.upd.Accepted, a)
}

// chosenSaveEvery: an Update that would only raise Chosen is dropped unless
// Chosen moved this far since it was last saved.
const chosenSaveEvery = 256

// saveChosenLazily keeps the chosen index out of Updates that carry
// nothing else, but for every chosenSaveEvery indexes, and adds it to
// every other Update. A chosen index is knowledge a restarted node
// relearns from its peers (the wal saves it without a sync anyway); a
// Badger transaction for each one was a third of all the wal's writes
// and of the fill that memtable rotations wait for.
func (c *core) saveChosenLazily() {
	if c.upd.Promised == nil && len(c.upd.Accepted) == 0 {
		if c.chosen < c.chosenSaved+chosenSaveEvery {
			c.upd.Chosen = 0
			return
		}
	}
	if c.chosen > c.chosenSaved {
		c.upd.Chosen = c.chosen
		c.chosenSaved = c.chosen
	}
}

func (c *core) setChosen(i uint64) {
	if i > c.chosen {
		c.chosen = i
		c.upd.Chosen = i
	}
}

func (c *core) inst(i uint64) *instance {
	in := c.log[i]
	if in == nil {
		in = &instance{}
		c.log[i] = in
		c.last = max(c.last, i)
	}
	return in
}

// initHistory sets the membership from the persisted history, else the
// initial members (a joining node starts without any).
func (c *core) initHistory() {
	if len(c.cfg.Meta) > 0 {
		h, err := decodeHistory(c.cfg.Meta)
		if err != nil {
			panic("paxos: persisted membership history: " + err.Error())
		}
		c.hist = h
	} else if !c.cfg.Join {
		c.hist = configGenesis(c.cfg)
	}
	if c.hist != nil {
		c.historyChanged()
	}
}

// configGenesis is the history a node that is not joining starts from
// when none was persisted: its configured members.
func configGenesis(cc coreConfig) *history {
	ms := make([]Member, 0, len(cc.Peers))
	for _, id := range cc.Peers {
		ms = append(ms, Member{ID: id, Addr: cc.Addrs[id], Learner: slices.Contains(cc.Learners, id)})
	}
	return genesis(ms)
}

func (c *core) randomTimeout() int { return c.cfg.ElectionTicks + c.rng.Intn(c.cfg.ElectionTicks) }

func popcount(v uint64) int { return bits.OnesCount64(v) }
