package paxos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"phxgo/wal"
)

// Node is a running Multi-Paxos member: the driver around the pure core.
// One goroutine (run) owns the core and the applier; gRPC handlers and
// Propose callers talk to it through channels.
type Node struct {
	cfg     Config
	log     *slog.Logger
	storage Storage
	tr      transport

	core *core    // owned by run
	app  *applier // owned by run
	// waiters maps a local command's seq to its caller; owned by run.
	waiters        map[uint64]*proposal
	sinceSnapshot  int
	lingerArmed    bool
	lingerTimer    *time.Timer
	recvc          chan []Message
	propc          chan *proposal
	abandonc       chan *proposal
	stopc, donec   chan struct{}
	stopOnce       sync.Once
	applied        atomic.Uint64
	mu             sync.Mutex // guards status, appliedCh
	status         Status
	appliedCh      chan struct{}
	fatal          error // set by run before donec closes
	storageFailure bool
}

type proposal struct {
	data  []byte
	flags byte
	seq   uint64
	done  chan proposeResult // buffered 1
}

type proposeResult struct {
	index  uint64
	result any
	err    error
}

// transport sends messages to peers, best effort, without blocking.
type transport interface {
	send(msgs []Message)
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
		if st, err = openWAL(cfg.Dir); err != nil {
			return nil, fmt.Errorf("%w: open wal %s: %w", ErrStorage, cfg.Dir, err)
		}
	}
	n := &Node{
		cfg:       cfg,
		log:       cfg.Logger.With("paxos_node", cfg.ID),
		storage:   st,
		app:       newApplier(sm),
		waiters:   make(map[uint64]*proposal),
		recvc:     make(chan []Message, 256),
		propc:     make(chan *proposal, 1024),
		abandonc:  make(chan *proposal, 1024),
		stopc:     make(chan struct{}),
		donec:     make(chan struct{}),
		appliedCh: make(chan struct{}),
	}
	core, err := restore(st, n.app, cfg.coreConfig(o.seed, uint64(time.Now().UnixNano())))
	if err != nil {
		st.Close()
		return nil, err
	}
	n.core = core
	n.applied.Store(n.app.applied)
	if o.transport != nil {
		n.tr = o.transport(n)
	} else {
		n.tr = newGRPCTransport(cfg, o.dialOptions, n.log)
	}
	n.lingerTimer = time.NewTimer(time.Hour)
	n.lingerTimer.Stop()
	n.publish()
	go n.run()
	return n, nil
}

// restore rebuilds the applier and the core from durable state.
func restore(st Storage, app *applier, cc coreConfig) (*core, error) {
	hs := st.HardState()
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
		from = as[len(as)-1].Index + 1
	}
	return newCore(cc, hs, acc, st), nil
}

// submit hands a command to the run loop and waits for its outcome.
func (n *Node) submit(ctx context.Context, data []byte, flags byte) proposeResult {
	p := &proposal{data: data, flags: flags, done: make(chan proposeResult, 1)}
	select {
	case n.propc <- p:
	case <-ctx.Done():
		return proposeResult{err: ctx.Err()}
	case <-n.donec:
		return proposeResult{err: n.stoppedErr()}
	}
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
		select {
		case n.abandonc <- p:
		case <-n.donec:
		}
		return proposeResult{err: ctx.Err()}
	}
}

func (n *Node) stoppedErr() error {
	<-n.donec
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

func (n *Node) run() {
	defer close(n.donec)
	ticker := time.NewTicker(n.cfg.HeartbeatInterval)
	defer ticker.Stop()
	// Entries chosen before a restart but not yet applied come out first.
	if !n.process() {
		n.shutdown()
		return
	}
	for {
		select {
		case <-n.stopc:
			n.shutdown()
			return
		case ms := <-n.recvc:
			n.stepAll(ms)
		case p := <-n.propc:
			n.propose(p)
		case p := <-n.abandonc:
			n.abandon(p)
		case <-ticker.C:
			n.core.tickOnce()
		case <-n.lingerTimer.C:
			n.lingerArmed = false
			n.core.flushBatch()
		}
		n.drain()
		if !n.process() {
			n.shutdown()
			return
		}
	}
}

// drain takes whatever else is waiting, so one Ready (one wal.Save)
// covers it all: this is the group commit.
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
	for _, m := range ms {
		n.core.step(m)
	}
}

func (n *Node) propose(p *proposal) {
	if !n.core.canPropose() {
		p.done <- proposeResult{err: ErrNoQuorum}
		return
	}
	p.seq = n.core.propose(p.data, p.flags)
	n.waiters[p.seq] = p
}

func (n *Node) abandon(p *proposal) {
	if n.waiters[p.seq] == p {
		delete(n.waiters, p.seq)
		n.core.abandon(p.seq)
	}
}

// process runs one Ready: persist, then send, then apply. It returns false
// after a fatal storage error.
func (n *Node) process() bool {
	c := n.core
	rd := c.ready()
	if c.role == leader && len(c.queue) > 0 && !n.lingerArmed {
		n.lingerArmed = true
		n.lingerTimer.Reset(n.cfg.BatchLinger)
	}
	if rd.empty() {
		return true
	}
	u := rd.Update
	if u.Promised != nil || len(u.Accepted) > 0 || u.Chosen != 0 {
		if err := n.storage.Save(u); err != nil {
			n.fail(fmt.Errorf("%w: save: %w", ErrStorage, err))
			return false
		}
	}
	if len(rd.Messages) > 0 {
		n.tr.send(rd.Messages)
	}
	for _, e := range rd.Committed {
		if err := n.app.applyEntry(e, n.onApplied); err != nil {
			n.fail(fmt.Errorf("%w: apply: %w", ErrStorage, err))
			return false
		}
		n.sinceSnapshot++
	}
	if len(rd.Committed) > 0 {
		n.applied.Store(n.app.applied)
		if n.sinceSnapshot >= n.cfg.SnapshotEvery {
			if err := n.saveApplied(); err != nil {
				n.fail(err)
				return false
			}
		}
	}
	n.publish()
	return true
}

func (n *Node) onApplied(cmd command, result any) {
	if cmd.Node != n.cfg.ID {
		return
	}
	if p := n.waiters[cmd.Seq]; p != nil {
		delete(n.waiters, cmd.Seq)
		p.done <- proposeResult{index: n.app.applied + 1, result: result}
	}
}

func (n *Node) saveApplied() error {
	snap, err := n.app.snapshot()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrStorage, err)
	}
	if err := n.storage.SaveApplied(n.app.applied, snap); err != nil {
		return fmt.Errorf("%w: save applied %d: %w", ErrStorage, n.app.applied, err)
	}
	n.sinceSnapshot = 0
	return nil
}

// publish refreshes Status and wakes AppliedCh waiters.
func (n *Node) publish() {
	c := n.core
	n.mu.Lock()
	defer n.mu.Unlock()
	prev := n.status.Applied
	n.status = Status{
		ID: n.cfg.ID, Leader: c.leader, Role: c.role.String(),
		Ballot: c.promised.Round, BallotNode: c.promised.Node,
		Chosen: c.chosen, Applied: n.app.applied,
		FirstIndex: n.storage.HardState().FirstIndex, Pending: len(c.pending),
	}
	if n.app.applied != prev {
		close(n.appliedCh)
		n.appliedCh = make(chan struct{})
	}
}

func (n *Node) fail(err error) {
	n.log.Error("paxos node stopping", "err", err)
	n.fatal = err
	n.storageFailure = true
}

// shutdown runs on the loop goroutine: fail waiters, persist the applied
// state, close transport and storage.
func (n *Node) shutdown() {
	err := ErrStopped
	if n.fatal != nil {
		err = n.fatal
	}
	for seq, p := range n.waiters {
		p.done <- proposeResult{err: err}
		delete(n.waiters, seq)
	}
	n.lingerTimer.Stop()
	n.tr.close()
	if !n.storageFailure && n.sinceSnapshot > 0 {
		if err := n.saveApplied(); err != nil {
			n.log.Error("persist applied state at stop", "err", err)
		}
	}
	if err := n.storage.Close(); err != nil && !errors.Is(err, ErrStopped) {
		n.log.Error("close storage", "err", err)
	}
	n.mu.Lock()
	close(n.appliedCh)
	n.appliedCh = make(chan struct{})
	n.mu.Unlock()
	// Proposals still queued in propc get ErrStopped from submit via donec.
}
