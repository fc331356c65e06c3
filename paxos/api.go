package paxos

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"

	"phxgo/wal"
)

// Errors returned by the engine. "Known failed" means the command was not
// and will never be chosen; "unknown" means it may have been chosen, or
// may yet be (the caller must find out through the log, e.g. Read).
var (
	// ErrNoQuorum: this node has heard neither a leader nor a majority of
	// members recently, so the command was refused before it left the
	// node. Known failed; retry later. (A leader running phase 1 again
	// because new members govern its next instance takes commands
	// meanwhile: core.canPropose.)
	ErrNoQuorum = errors.New("paxos: no quorum reachable")
	// ErrValueTooLarge: the command exceeds Config.MaxValueBytes. Known failed.
	ErrValueTooLarge = errors.New("paxos: command too large")
	// ErrStopped: the node is stopping or stopped. For a Propose that was
	// already accepted by the node, the outcome is unknown.
	ErrStopped = errors.New("paxos: node stopped")
	// ErrStorage wraps a storage failure. The node stops itself (it cannot
	// answer peers without durability); outcomes of pending Proposes are
	// unknown.
	ErrStorage = errors.New("paxos: storage failure")
	// ErrNotLeader is internal: a forwarded command reached a non-leader.
	// Propose never returns it (the command is re-forwarded).
	ErrNotLeader = errors.New("paxos: not the leader")
	// ErrBadConfig: Config.Validate failed; the message names the field.
	ErrBadConfig = errors.New("paxos: bad config")
	// ErrBadValue: a value or snapshot failed to decode (corruption, or a
	// peer speaking another format).
	ErrBadValue = errors.New("paxos: malformed value")
)

// Command is one chosen command as Read returns it.
type Command struct {
	Index uint64 // the log index; several commands may share one
	Data  []byte
}

// Status is a node's view, for monitoring. It is a snapshot: any field may
// be stale by the time the caller reads it.
type Status struct {
	ID         uint32
	Leader     uint32 // 0 = unknown
	Role       string // "leader", "candidate" or "follower"
	Ballot     uint64 // round of the highest ballot this node promised
	BallotNode uint32 // node part of that ballot
	Chosen     uint64 // every index <= Chosen is chosen and stored here
	Applied    uint64 // every index <= Applied was applied to the state machine
	FirstIndex uint64 // lowest index still stored
	Pending    int    // this node's commands not applied yet
	// Counters since Start: values this node proposed while leading and
	// the commands and bytes in them (their ratio is the batch size), and
	// how often the leader it knows changed.
	ValuesProposed, CommandsProposed, BytesProposed, LeaderChanges uint64
	// Dropped counts peer messages refused as hostile or out of range,
	// by DropReason (doc.go, "Hostile input"); never panicked on.
	Dropped [NumDropReasons]uint64
	// Reads served by ReadNext from the in-memory tail of applied
	// entries, and reads that went to storage (a reader behind the tail).
	TailReads, StorageReads uint64
	// StepDowns counts this node's step-downs as leader by cause;
	// LeaderTimeouts the times, as a follower, it heard its leader for
	// no election timeout and started asking whether it is gone.
	StepDowns      [NumStepDownCauses]uint64
	LeaderTimeouts uint64
	// BallotExhausted: this node can no longer run an election: its
	// rounds reached MaxRound, or it restored a promise above MaxRound
	// (StuckPromise: it keeps the promise, so it never votes again, and
	// still learns and applies the log).
	BallotExhausted, StuckPromise bool
	// LogDigests are this node's newest finished range digests (at most
	// 4, ascending), the ones it sends its peers (digest.go).
	LogDigests []RangeDigest
	// Divergences are the ranges a peer's digest showed differently
	// (the first 64 seen since Start, with counts as of now);
	// DivergencesSeen counts all of them. Either nonzero: this node's log
	// and a peer's hold different chosen values, which Paxos rules out
	// for nodes that only stop: the cluster is not healthy.
	Divergences     []Divergence
	DivergencesSeen uint64
	// OddRanges are the ranges where the majority of the digests this
	// node knew named its own log the odd one; kept across restarts
	// (digest_odd.go). Nonempty: replace this node (remove it, add it
	// back with an empty directory).
	OddRanges []OddRange
}

// Option adjusts Start.
type Option func(*options)

type options struct {
	commitObserver func(time.Duration)
	stageObserver  func(Stage, time.Duration)
	storage        Storage
	dialOptions    []grpc.DialOption
	peerDialOption func(id uint32) grpc.DialOption
	transport      func(n *Node) transport
	seed           int64
}

// WithCommitObserver makes the node call f with the time each of its
// Propose calls took from submission to applied (successful ones only),
// for a latency histogram. f runs on the applier goroutine: keep it short.
func WithCommitObserver(f func(time.Duration)) Option {
	return func(o *options) { o.commitObserver = f }
}

// WithStorage makes the node use s instead of opening a wal in Config.Dir
// (e.g. NewMemoryStorage() in tests). The node closes s on Stop.
func WithStorage(s Storage) Option { return func(o *options) { o.storage = s } }

// WithDialOptions adds grpc.DialOptions for connections to peers (TLS,
// ...). Without them, connections are insecure.
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(o *options) { o.dialOptions = append(o.dialOptions, opts...) }
}

// WithPeerDialOption adds f(id) to the grpc.DialOptions of the
// connection to peer id, after WithDialOptions' (the last transport
// credential wins): binlogd gives each peer TLS credentials that refuse a
// server whose certificate is not node id's (mtls.ExpectNode).
func WithPeerDialOption(f func(id uint32) grpc.DialOption) Option {
	return func(o *options) { o.peerDialOption = f }
}

// Propose submits cmd and returns once it is chosen AND applied on this
// node, with its log index and the StateMachine.Apply result. A follower
// forwards cmd to the leader; commands are retried across leader changes
// and applied exactly once. Concurrent Proposes are ordered as they reach
// the node; to fix the order of pipelined commands use ProposeAsync
// (which documents the order guarantee).
//
// Errors: ErrValueTooLarge and ErrNoQuorum (known failed); ErrStopped,
// ErrStorage and ctx.Err() (outcome unknown: the command may be chosen
// later; if so it is applied everywhere, but its result is lost).
func (n *Node) Propose(ctx context.Context, cmd []byte) (index uint64, result any, err error) {
	if len(cmd) > n.cfg.MaxValueBytes {
		return 0, nil, fmt.Errorf("%w: %d bytes > MaxValueBytes %d", ErrValueTooLarge, len(cmd), n.cfg.MaxValueBytes)
	}
	r := n.submit(ctx, cmd, 0)
	return r.index, r.result, r.err
}

// Proposal is a command submitted with ProposeAsync.
type Proposal struct {
	n    *Node
	p    *proposal
	stop func() bool
	r    *proposeResult
}

// ProposeAsync submits cmd like Propose but returns as soon as the node
// has queued it; Wait returns the outcome. ctx bounds the command's life:
// if it ends before the outcome, the command is abandoned as a cancelled
// Propose is, and Wait returns ctx.Err(). Errors from ProposeAsync itself
// (known failed): ErrValueTooLarge, ctx.Err() before queueing, ErrStopped.
//
// Order. The node fixes a command's place when ProposeAsync (or Propose)
// queues it; calls made one after another (ProposeAsync returned before
// the next call) are queued in call order. Guarantee: let a then b be
// queued in that order on node N. If N is the leader, under one ballot,
// from before a is queued until b is chosen, and neither a's nor b's ctx
// ended, then a is chosen at a lower index than b, or at the same index
// before it, so every StateMachine applies a before b. (N cannot refuse
// a command with ErrNoQuorum meanwhile: a leader that loses its quorum
// steps down.) When N follows a leader L, the order also holds
// if L leads under one ballot throughout and no Forward from N to L is
// lost (peer streams are FIFO; a lost one is re-sent after 2 x
// ElectionTimeout, and then may land after later commands). After a
// leader change, commands re-sent to the new leader keep their relative
// order, but ones the old leader had already proposed may be chosen
// anywhere before them. Any command may be chosen twice (a re-send); the
// applier applies only its first copy, so the order above is the apply
// order.
func (n *Node) ProposeAsync(ctx context.Context, cmd []byte) (*Proposal, error) {
	if len(cmd) > n.cfg.MaxValueBytes {
		return nil, fmt.Errorf("%w: %d bytes > MaxValueBytes %d", ErrValueTooLarge, len(cmd), n.cfg.MaxValueBytes)
	}
	p, err := n.enqueue(ctx, cmd, 0)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { n.giveUp(p, ctx.Err()) })
	return &Proposal{n: n, p: p, stop: stop}, nil
}

// Wait returns the outcome of the proposal, as Propose would: its index
// and Apply's result, or an error (see Propose). If ctx ends first, Wait
// returns ctx.Err() and the command goes on; Wait may be called again.
// Not safe for concurrent use by several goroutines.
func (pr *Proposal) Wait(ctx context.Context) (index uint64, result any, err error) {
	if pr.r == nil {
		r := pr.n.wait(ctx, pr.p, false)
		if r.err != nil && r.err == ctx.Err() {
			return 0, nil, r.err
		}
		pr.stop()
		pr.r = &r
	}
	return pr.r.index, pr.r.result, pr.r.err
}

// Barrier returns a linearizable read point: a Noop it proposed is chosen
// and applied locally, at the returned index, so every command chosen
// before Barrier was called is applied here. Errors as for Propose (a
// failed Barrier has no effect on the state).
func (n *Node) Barrier(ctx context.Context) (index uint64, err error) {
	r := n.submit(ctx, nil, flagBarrier)
	return r.index, r.err
}

// Campaign makes this node the leader: it runs phase 1 at once with a
// ballot above every one it has seen (skipping the probe that a timed-out
// follower runs first, so it preempts a working leader), and returns nil
// once it leads. If it loses phase 1 to another ballot it retries after a
// randomized backoff of 1..E ticks (E = ElectionTimeout/HeartbeatInterval),
// so two nodes campaigning at once settle within a few rounds rather than
// dueling. Returns nil at once if this node already leads.
//
// nil means this node led at some moment after the call; by the time the
// caller looks, another Campaign may have taken over (check IsLeader).
// Once this node leads, followers that hear its heartbeats refuse the
// probes of others, so only another Campaign, or a majority losing
// contact with it, moves leadership away.
//
// Errors: ErrNoQuorum at the call if this node heard neither the leader
// it follows nor a majority within 2 x ElectionTimeout, or 2 x
// ElectionTimeout after the call if the campaign's own Prepares brought
// back no majority in that time (a follower hears only the leader until
// then, so the check waits for the answers); ctx.Err(); ErrStopped. After an
// error this node may still have raised its ballot, so the old leader may
// have stepped down and a new election may follow.
func (n *Node) Campaign(ctx context.Context) error { return n.campaign(ctx) }

// IsLeader reports whether this node leads now (a snapshot: it may stop
// at any moment). A leader proposes its own commands without forwarding.
func (n *Node) IsLeader() bool { return n.leading.Load() }

// Read returns chosen commands (no Noops, no Barriers) with index >= from,
// or ErrCompacted when from is below the log's first index (see Base),
// in log order, from the local durable log, stopping after about maxBytes
// of values or at the applied index. It returns no commands when from is
// beyond Applied. A command retried after a leader change may appear twice
// in the log (at different indexes); Apply sees it once, Read returns both,
// so a reader that needs exactly-once must deduplicate or validate (binlog
// batches do, by their GTID chain).
func (n *Node) Read(from uint64, maxBytes int) ([]Command, error) {
	cmds, _, err := n.ReadNext(from, maxBytes)
	return cmds, err
}

// ReadNext is Read that also returns the index to read from next: one
// past the last index it examined. A reader that advances by it never
// skips an index, even when a range held only Noops (which Read leaves
// out) and Applied moved on meanwhile.
//
// The newest applied entries, up to Config.ReadTailBytes of values, are
// served from memory (already decoded); a reader behind them reads the
// durable log. Both give the same commands.
func (n *Node) ReadNext(from uint64, maxBytes int) (cmds []Command, next uint64, err error) {
	applied := n.Applied()
	if from == 0 {
		from = 1
	}
	if from > applied {
		return nil, from, nil
	}
	if first := n.storage.HardState().FirstIndex; from < first {
		return nil, from, fmt.Errorf("%w: read from %d, log starts at %d", ErrCompacted, from, first)
	}
	if cmds, next, ok := n.tail.read(from, applied, maxBytes); ok {
		n.tailReads.Add(1)
		return cmds, next, nil
	}
	n.storeReads.Add(1)
	as, err := n.storage.Range(from, applied, maxBytes)
	if errors.Is(err, wal.ErrCompacted) {
		return nil, from, fmt.Errorf("%w: read from %d: %w", ErrCompacted, from, err)
	}
	if err != nil {
		return nil, from, fmt.Errorf("%w: read from %d: %w", ErrStorage, from, err)
	}
	next = from
	for _, a := range as {
		if a.Index != next {
			// Every applied instance is stored; a reader that skipped one
			// would miss a command for good.
			return cmds, next, fmt.Errorf("%w: applied instance %d missing from the log (next stored: %d)", ErrStorage, next, a.Index)
		}
		vals, err := decodeValue(a.Value)
		if err != nil {
			return cmds, next, fmt.Errorf("index %d: %w", a.Index, err)
		}
		for _, c := range vals {
			if !c.internal() {
				cmds = append(cmds, Command{Index: a.Index, Data: c.Data})
			}
		}
		next = a.Index + 1
	}
	return cmds, next, nil
}

// Applied returns the highest index applied on this node.
func (n *Node) Applied() uint64 { return n.applied.Load() }

// AppliedCh returns a channel that is closed when Applied next advances
// (or the node stops). Take a fresh one after each wake-up:
//
//	for n.Applied() < want { ch := n.AppliedCh(); if n.Applied() >= want {break}; <-ch }
func (n *Node) AppliedCh() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.appliedCh
}

// WaitApplied blocks until index is applied here. Errors: ctx.Err(),
// ErrStopped.
func (n *Node) WaitApplied(ctx context.Context, index uint64) error {
	for {
		ch := n.AppliedCh()
		if n.Applied() >= index {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-n.donec:
			if n.Applied() >= index {
				return nil
			}
			return ErrStopped
		}
	}
}

// Status returns this node's current view.
func (n *Node) Status() Status {
	n.mu.Lock()
	st := n.status
	n.mu.Unlock()
	st.TailReads, st.StorageReads = n.tailReads.Load(), n.storeReads.Load()
	st.LogDigests, st.Divergences, st.DivergencesSeen = n.digests.book.status()
	st.OddRanges = n.digests.odd.list()
	return st
}

// WALStats returns the counters of the node's wal; ok is false when the
// node runs on another Storage (WithStorage).
func (n *Node) WALStats() (st wal.Stats, ok bool) {
	if l, ok := n.storage.(*wal.Log); ok {
		return l.Stats(), true
	}
	return wal.Stats{}, false
}

// RegisterGRPC registers the Paxos peer service on s, a server the caller
// owns, starts and stops (binlogd serves its Admin service on it too).
// Create s with GRPCServerOptions(cfg): a peer's message can be larger
// than gRPC's default 4 MiB receive limit.
func (n *Node) RegisterGRPC(s *grpc.Server) { registerPeerService(s, n) }

// GRPCServerOptions returns the options a server given to RegisterGRPC
// needs for nodes configured like cfg: a receive limit of
// MaxMessageBytes, and keepalive that lets peers ping (and pings them),
// so links that lost packets are closed and redialled (grpc.go).
func GRPCServerOptions(cfg Config) []grpc.ServerOption {
	return append([]grpc.ServerOption{grpc.MaxRecvMsgSize(cfg.MaxMessageBytes())}, linkServerOptions(cfg)...)
}

// MaxMessageBytes bounds what one peer sends in one gRPC message. Accepts,
// Forwards and catch-up answers are cut at FetchMaxBytes plus one value,
// and the transport packs messages up to 1 MiB; but a phase-1 Promise
// carries every value its acceptor holds above the chosen index, up to a
// window of instances from the last leader and as many from the one
// before, and it cannot be cut: the candidate must see them all. A
// Promise over the limit is lost like any message over it, so an election
// under large commands (64 KiB ones against a fixed 4 MiB limit) would
// never finish. Capped at 1 GiB.
func (c Config) MaxMessageBytes() int {
	value := max(c.BatchMaxBytes, c.MaxValueBytes) + 64
	n := int64(2*c.Window)*int64(value) + 2*int64(c.FetchMaxBytes) + 2*maxBatchBytes
	return int(min(max(n, 4<<20), 1<<30))
}

// Stop stops the node: pending Proposes return ErrStopped, the applied
// state is persisted, connections and storage are closed. Idempotent;
// returns when every goroutine of the node has exited.
func (n *Node) Stop() {
	n.stopOnce.Do(func() { close(n.stopc) })
	<-n.donec
}
