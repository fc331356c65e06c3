package paxos

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"phxgo/wal"
)

// Node is a running Multi-Paxos member: the driver around the pure core.
// Four goroutines form a pipeline:
//
//	run (owns rawNode) ──Ready──▶ persister ──saves──▶ completer ──entries──▶ applier (owns sm)
//	                              (merge, SaveAsync)   (in order: wait, send)
//
// run keeps stepping the core while earlier Readys are being made
// durable; the persister merges all Readys waiting for it into one Save
// and submits it without waiting, so several Saves can be syncing at once
// (persist.go).
type Node struct {
	cfg     Config
	log     *slog.Logger
	storage Storage
	tr      transport

	rn          *rawNode            // the core's API; owned by run
	app         *applier            // owned by the applier goroutine
	tail        *readTail           // recently applied entries, for ReadNext (readtail.go)
	tailReads   atomic.Uint64       // ReadNext calls served from tail
	storeReads  atomic.Uint64       // ReadNext calls that read storage
	observe     func(time.Duration) // WithCommitObserver; nil: none
	stages      *stageClock         // WithStageObserver; nil: none
	lingerArmed bool
	lingerTimer *time.Timer

	wmu     sync.Mutex
	waiters map[uint64]*proposal // a local command's seq -> its caller

	recvc      chan []Message
	propc      chan *proposal
	campc      chan campaignOp
	campaigns  map[*campaignReq]struct{} // owned by run
	abandonc   chan *proposal
	persistQ   chan Ready
	completeQ  chan *saveJob
	applyQ     chan applyItem
	compactc   chan compactReq
	stableNote chan struct{}
	stable     atomic.Uint64 // highest committed index made durable
	failed     atomic.Bool

	stopc, donec chan struct{}
	stopOnce     sync.Once
	applied      atomic.Uint64
	leading      atomic.Bool
	mu           sync.Mutex // guards status, appliedCh, fatal
	status       Status
	appliedCh    chan struct{}
	fatal        error
	sinceSnap    int           // applier goroutine
	doneBuf      []appliedDone // applier goroutine: Proposes to answer once Applied moves
	ckpts        []checkpoint  // applier goroutine: durable snapshots to compact to
	snapSaving   bool          // applier goroutine: a background save is out (snapsave.go)
	snapDone     chan snapSave // its outcome

	dropLog dropLogger   // run loop: rate-limited log of dropped messages
	leadLog leaderLogger // run loop: leadership changes

	digests *nodeDigests     // log digests (digest_node.go)
	dtr     *digestTransport // tr, which carries them

	meta     metaStore
	members  atomic.Pointer[history] // published copy of the core's
	chosenAt atomic.Uint64           // core's chosen index, for Membership
	metac    chan metaReq
}

type proposal struct {
	start time.Time // for Config's commit observer
	data  []byte
	flags byte
	seq   uint64
	cause error              // why its caller gave up (set before abandonc)
	done  chan proposeResult // buffered 1; written once
}

type proposeResult struct {
	index  uint64
	result any
	err    error
}

// transport sends messages to peers, best effort, without blocking.
type transport interface {
	send(msgs []Message)
	setPeers(addrs map[uint32]string)
	close()
}

// Start opens the wal in cfg.Dir (or the WithStorage storage), restores
// sm from the persisted snapshot, and runs the node. It applies entries
// chosen before a restart but not yet applied before anything else. Call
// RegisterGRPC to serve peers.
func Start(cfg Config, sm StateMachine, opts ...Option) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := options{seed: time.Now().UnixNano()}
	for _, opt := range opts {
		opt(&o)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	st := o.storage
	if st == nil {
		if cfg.Dir == "" {
			return nil, fmt.Errorf("%w: Dir: empty (and no WithStorage)", ErrBadConfig)
		}
		var err error
		if st, err = openWAL(cfg); err != nil {
			return nil, fmt.Errorf("%w: open wal %s: %w", ErrStorage, cfg.Dir, err)
		}
	}
	n := &Node{
		cfg:        cfg,
		observe:    o.commitObserver,
		stages:     newStageClock(o.stageObserver),
		log:        cfg.Logger.With("paxos_node", cfg.ID),
		storage:    st,
		app:        newApplier(sm),
		tail:       newReadTail(cfg.ReadTailBytes),
		waiters:    make(map[uint64]*proposal),
		recvc:      make(chan []Message, 256),
		propc:      make(chan *proposal, 1024),
		campc:      make(chan campaignOp, 16),
		campaigns:  make(map[*campaignReq]struct{}),
		abandonc:   make(chan *proposal, 1024),
		persistQ:   make(chan Ready, 256),
		completeQ:  make(chan *saveJob, maxSavesInFlight),
		applyQ:     make(chan applyItem, 256),
		compactc:   make(chan compactReq),
		snapDone:   make(chan snapSave, 1),
		stableNote: make(chan struct{}, 1),
		stopc:      make(chan struct{}),
		donec:      make(chan struct{}),
		appliedCh:  make(chan struct{}),
	}
	cc := cfg.coreConfig(o.seed, uint64(time.Now().UnixNano()))
	var fallback []byte // what the core starts from without a history
	if !cc.Join {
		fallback = configGenesis(cc).encode()
	}
	n.meta = openMeta(st, cfg.Dir, fallback)
	n.metac = make(chan metaReq)
	meta, err := n.meta.LoadMeta()
	cc.Meta = meta
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("%w: %w", ErrStorage, err)
	}
	rn, err := restore(st, n.app, cc)
	if err != nil {
		st.Close()
		return nil, err
	}
	n.rn = rn
	if rn.Soft().StuckPromise {
		n.log.Error("paxos: the wal holds a promise above the highest valid round (written by a forged message before peer input was checked); "+
			"this node keeps it, as Paxos requires, so it will never vote or lead again, but it learns and applies the log. "+
			"To make it a voter again, remove it from the membership and add it back with an empty data directory.",
			"promised_round", st.HardState().Promised.Round, "promised_node", st.HardState().Promised.Node, "max_round", MaxRound)
	}
	n.applied.Store(n.app.applied)
	n.digests = startDigests(cfg, st, n.app.applied, n.log)
	n.noteOdd()
	if hs := st.HardState(); hs.Snapshot != nil {
		n.addCheckpoint(hs.Applied, hs.Snapshot)
	}
	if o.transport != nil {
		n.tr = o.transport(n)
	} else {
		n.tr = newGRPCTransport(cfg, o.dialOptions, o.peerDialOption, n.log)
	}
	n.dtr = newDigestTransport(n.tr, n.digests.book, cfg.ElectionTimeout, cfg.ID, cfg.Peers)
	n.tr = n.dtr
	n.lingerTimer = time.NewTimer(time.Hour)
	n.lingerTimer.Stop()
	n.followMembers(rn.Members())
	n.publishCore()
	n.status.Applied = n.app.applied
	n.status.FirstIndex = st.HardState().FirstIndex
	go n.run()
	go n.persister()
	go n.completer()
	go n.applyLoop()
	return n, nil
}

// restore rebuilds the applier and the core from durable state.
func restore(st Storage, app *applier, cc coreConfig) (*rawNode, error) {
	hs := st.HardState()
	if hs.Chosen > MaxIndex || hs.Applied > MaxIndex {
		// Only a forged Snapshot (before peer input was checked) gets
		// here; every index above would wrap. No safe way to go on.
		return nil, fmt.Errorf("%w: corrupt hard state: chosen index %d, applied %d above the maximum %d (a forged snapshot?)",
			ErrStorage, hs.Chosen, hs.Applied, MaxIndex)
	}
	if err := app.restore(hs.Applied, hs.Snapshot); err != nil {
		return nil, fmt.Errorf("restore snapshot at %d: %w", hs.Applied, err)
	}
	last := st.LastIndex()
	var acc []wal.Accepted
	for from := hs.Applied + 1; from <= last; {
		as, err := st.Range(from, last, 64<<20)
		if err != nil {
			return nil, fmt.Errorf("%w: load log from %d: %w", ErrStorage, from, err)
		}
		if len(as) == 0 {
			break
		}
		acc = append(acc, as...)
		if as[len(as)-1].Index >= last {
			break // also: Index+1 would wrap at the uint64 limit
		}
		from = as[len(as)-1].Index + 1
	}
	return newRawNode(cc, hs, acc, st), nil
}

// submit hands a command to the run loop and waits for its outcome.
func (n *Node) submit(ctx context.Context, data []byte, flags byte) proposeResult {
	p, err := n.enqueue(ctx, data, flags)
	if err != nil {
		return proposeResult{err: err}
	}
	return n.wait(ctx, p, true)
}

// enqueue hands a command to the run loop; commands enqueued by one
// goroutine reach the core in that order (propc is FIFO).
func (n *Node) enqueue(ctx context.Context, data []byte, flags byte) (*proposal, error) {
	p := &proposal{data: data, flags: flags, done: make(chan proposeResult, 1)}
	if n.observe != nil || n.stages != nil {
		p.start = time.Now()
	}
	select {
	case n.propc <- p:
		return p, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-n.donec:
		return nil, n.stoppedErr()
	}
}

// wait waits for p's outcome; when ctx ends first it returns ctx.Err()
// and, if giveUp, abandons the command.
func (n *Node) wait(ctx context.Context, p *proposal, giveUp bool) proposeResult {
	select {
	case r := <-p.done:
		return r
	case <-n.donec:
		select {
		case r := <-p.done:
			return r
		default:
			return proposeResult{err: n.stoppedErr()}
		}
	case <-ctx.Done():
		if giveUp {
			n.giveUp(p, ctx.Err())
		}
		return proposeResult{err: ctx.Err()}
	}
}

// giveUp asks the run loop to abandon p; if it was still pending, p.done
// receives cause.
func (n *Node) giveUp(p *proposal, cause error) {
	p.cause = cause
	select {
	case n.abandonc <- p:
	case <-n.donec:
	}
}

func (n *Node) stoppedErr() error {
	<-n.donec
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fatal != nil {
		return n.fatal
	}
	return ErrStopped
}

// deliver is called by the gRPC server with messages from a peer.
func (n *Node) deliver(ms []Message) error {
	select {
	case n.recvc <- ms:
		return nil
	case <-n.stopc:
		return ErrStopped
	}
}

// run owns the core: it steps inputs and hands Readys to the persister.
func (n *Node) run() {
	defer close(n.persistQ)
	ticker := time.NewTicker(n.cfg.HeartbeatInterval)
	defer ticker.Stop()
	defer n.lingerTimer.Stop()
	// Entries chosen before a restart but not yet applied come out first.
	n.emit()
	for {
		select {
		case <-n.stopc:
			return
		case ms := <-n.recvc:
			n.stepAll(ms)
		case p := <-n.propc:
			n.propose(p)
		case p := <-n.abandonc:
			n.abandon(p)
		case op := <-n.campc:
			n.onCampaign(op)
		case <-ticker.C:
			n.rn.Tick()
			n.dtr.tick()
			n.noteOdd() // a mark the applier recorded
		case <-n.lingerTimer.C:
			n.lingerArmed = false
			n.rn.Flush()
		case <-n.stableNote:
			n.rn.Advance(n.stable.Load())
		case r := <-n.metac:
			r.done <- n.rn.AdoptMeta(r.meta)
		}
		n.drain()
		n.emit()
	}
}

// drain takes whatever else is waiting, so one Ready covers it all.
func (n *Node) drain() {
	for i := 0; i < 4096; i++ {
		select {
		case ms := <-n.recvc:
			n.stepAll(ms)
		case p := <-n.propc:
			n.propose(p)
		case p := <-n.abandonc:
			n.abandon(p)
		default:
			return
		}
	}
}

func (n *Node) stepAll(ms []Message) {
	for _, m := range n.checkSnapshots(ms) {
		if len(m.Digests) > 0 {
			// Only from a node the core knows (it drops a stranger's
			// message whole; the digests go with it).
			if _, known := n.rn.c.peerPos[m.From]; known && m.From != n.cfg.ID && m.To == n.cfg.ID {
				n.digests.fromPeer(m.From, m.Digests)
				n.noteOdd()
			}
		}
		if m.Type == MsgDigests {
			continue // the driver's alone (digestbook.go)
		}
		n.rn.Step(m)
	}
}

func (n *Node) propose(p *proposal) {
	seq, err := n.rn.Propose(p.data, p.flags)
	if err != nil {
		p.done <- proposeResult{err: err}
		return
	}
	p.seq = seq
	n.wmu.Lock()
	n.waiters[p.seq] = p
	n.wmu.Unlock()
}

func (n *Node) abandon(p *proposal) {
	n.wmu.Lock()
	mine := n.waiters[p.seq] == p
	if mine {
		delete(n.waiters, p.seq)
	}
	n.wmu.Unlock()
	if mine {
		n.rn.Abandon(p.seq)
		p.done <- proposeResult{err: p.cause}
	}
}

// emit takes the core's Ready: Early messages leave now, the rest goes
// to the persister.
func (n *Node) emit() {
	rd := n.rn.Ready()
	if rd.Linger && !n.lingerArmed {
		n.lingerArmed = true
		n.lingerTimer.Reset(n.cfg.BatchLinger)
	}
	if rd.Members != nil {
		n.followMembers(rd.Members)
		rd.Members = nil
	}
	if n.stages != nil {
		n.stages.emitted(&rd, n.rn.Soft())
	}
	if len(rd.Early) > 0 {
		n.tr.send(rd.Early)
		rd.Early = nil
	}
	if !rd.empty() {
		select {
		case n.persistQ <- rd:
		case <-n.stopc:
		}
	}
	// Published first: a Campaign that returns nil finds IsLeader true.
	n.publishCore()
	n.checkCampaigns()
}

// applyLoop applies chosen entries in order and hands results to callers;
// it also runs compactions (compact.go), which need the applied state.
func (n *Node) applyLoop() {
	defer close(n.donec)
	for {
		var it applyItem
		select {
		case r := <-n.compactc:
			first, err := n.compactNow(r.index)
			r.done <- compactResult{first, err}
			continue
		case sv := <-n.snapDone:
			n.finishSnapshotSave(sv)
			continue
		case x, ok := <-n.applyQ:
			if !ok {
				n.shutdown()
				return
			}
			it = x
		}
		if n.failed.Load() {
			continue
		}
		if it.install != nil {
			before := n.app.applied
			if err := n.installSnapshot(it.install); err != nil {
				n.fail(err)
			}
			if n.app.applied != before {
				// The ranges below the snapshot, and the one it ends
				// inside, are unknown here (digest.go).
				n.digests.d.reset(n.app.applied)
			}
			n.publishApplied()
			continue
		}
		for _, e := range it.entries {
			cmds, err := n.app.applyEntry(e, n.onApplied)
			if err != nil {
				n.fail(fmt.Errorf("%w: apply: %w", ErrStorage, err))
				break
			}
			// Before Applied moves: a reader that sees the new Applied
			// finds the entry in the tail.
			n.tail.add(e.Index, cmds, len(e.Value))
			n.digests.applied(e)
			n.sinceSnap++
		}
		n.applied.Store(n.app.applied)
		n.stages.applied(n.app.applied)
		n.finishApplied()
		if n.sinceSnap >= n.cfg.SnapshotEvery && !n.failed.Load() {
			n.startSnapshotSave()
		}
		n.publishApplied()
	}
}

func (n *Node) onApplied(cmd command, result any) {
	if cmd.Node != n.cfg.ID {
		return
	}
	n.wmu.Lock()
	p := n.waiters[cmd.Seq]
	delete(n.waiters, cmd.Seq)
	n.wmu.Unlock()
	if p != nil {
		if at := n.stages.proposedAt(n.app.applied + 1); !at.IsZero() && !p.start.IsZero() {
			n.stages.observe(StageQueue, at.Sub(p.start))
		}
		n.doneBuf = append(n.doneBuf, appliedDone{p, proposeResult{index: n.app.applied + 1, result: result}})
	}
}

// finishApplied answers the Proposes applied in this round, after Applied
// moved past them: a caller that reads the log right after its Propose
// returned finds its command (ReadNext reads up to Applied).
func (n *Node) finishApplied() {
	for i, d := range n.doneBuf {
		if f := n.observe; f != nil && !d.p.start.IsZero() {
			f(time.Since(d.p.start)) // first: its caller may look right after Propose
		}
		d.p.done <- d.r
		n.doneBuf[i] = appliedDone{}
	}
	n.doneBuf = n.doneBuf[:0]
}

type appliedDone struct {
	p *proposal
	r proposeResult
}

// saveApplied saves the applied state and waits for it (applier
// goroutine); the periodic save runs in the background (snapsave.go).
func (n *Node) saveApplied() error {
	n.waitSnapshotSave()
	snap, err := n.app.snapshot()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrStorage, err)
	}
	if err := n.storage.SaveApplied(n.app.applied, snap); err != nil {
		return fmt.Errorf("%w: save applied %d: %w", ErrStorage, n.app.applied, err)
	}
	n.sinceSnap = 0
	n.addCheckpoint(n.app.applied, snap)
	return nil
}

func (n *Node) publishCore() {
	c := n.rn.Soft()
	n.mu.Lock()
	defer n.mu.Unlock()
	if c.Leader != n.status.Leader && c.Leader != 0 {
		n.status.LeaderChanges++
	}
	n.status.ID, n.status.Leader, n.status.Role = n.cfg.ID, c.Leader, c.Role.String()
	n.status.ValuesProposed, n.status.CommandsProposed, n.status.BytesProposed = c.ValuesProposed, c.CmdsProposed, c.BytesProposed
	n.status.Ballot, n.status.BallotNode = c.Promised.Round, c.Promised.Node
	n.status.Chosen, n.status.Pending = c.Chosen, c.Pending
	n.status.Dropped = c.Dropped
	n.status.BallotExhausted, n.status.StuckPromise = c.Exhausted || c.StuckPromise, c.StuckPromise
	n.status.StepDowns, n.status.LeaderTimeouts = c.StepDowns, c.LeaderTimeouts
	n.dropLog.maybeLog(n.log, &c, time.Now())
	n.leadLog.maybeLog(n.log, &c, n.cfg.HeartbeatInterval, 2*time.Duration(n.rn.c.cfg.ElectionTicks)*n.cfg.HeartbeatInterval)
	n.chosenAt.Store(c.Chosen)
	n.leading.Store(c.Role == leader)
}

// publishApplied refreshes Status.Applied and wakes AppliedCh waiters.
func (n *Node) publishApplied() {
	first := n.storage.HardState().FirstIndex
	n.mu.Lock()
	defer n.mu.Unlock()
	n.status.FirstIndex = first
	if n.app.applied != n.status.Applied {
		n.status.Applied = n.app.applied
		close(n.appliedCh)
		n.appliedCh = make(chan struct{})
	}
}

// fail records a fatal storage error and stops the node.
func (n *Node) fail(err error) {
	n.log.Error("paxos node stopping", "err", err)
	n.mu.Lock()
	if n.fatal == nil {
		n.fatal = err
	}
	n.mu.Unlock()
	n.failed.Store(true)
	n.stopOnce.Do(func() { close(n.stopc) })
}

// shutdown runs last, on the applier goroutine: persist the applied
// state, close storage, fail the remaining waiters.
func (n *Node) shutdown() {
	n.waitSnapshotSave() // before the storage closes under it
	if !n.failed.Load() && n.sinceSnap > 0 {
		if err := n.saveApplied(); err != nil {
			n.log.Error("persist applied state at stop", "err", err)
		}
	}
	if err := n.storage.Close(); err != nil {
		n.log.Error("close storage", "err", err)
	}
	n.digests.close()
	n.mu.Lock()
	err := n.fatal
	close(n.appliedCh)
	n.appliedCh = make(chan struct{})
	n.mu.Unlock()
	if err == nil {
		err = ErrStopped
	}
	n.wmu.Lock()
	for seq, p := range n.waiters {
		p.done <- proposeResult{err: err}
		delete(n.waiters, seq)
	}
	n.wmu.Unlock()
}
