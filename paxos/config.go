package paxos

import (
	"fmt"
	"log/slog"
	"slices"
	"time"
)

// Config configures a Node. Start with DefaultConfig and set ID, Peers, Dir.
type Config struct {
	// ID is this node's id, nonzero, a key of Peers.
	ID uint32
	// Peers maps every initial member's id (this node included) to its
	// gRPC address. At most 64 members. Once the log holds membership
	// changes, the persisted history governs and Peers only seeds it.
	Peers map[uint32]string
	// Learners lists the initial members (keys of Peers) that start as
	// learners: they follow the log but never vote (Member.Learner). At
	// least one initial member must vote. Ignored once a history exists.
	Learners []uint32
	// Join makes a new node join an existing cluster: Peers lists seeds
	// (current members, and this node); the node learns the members from
	// them and neither votes nor campaigns until a chosen change adds it
	// (AddMember on any member).
	Join bool
	// Dir is the wal directory (unused when WithStorage is given).
	Dir string
	// WALSegmentBytes is the size of the wal's segment files
	// (wal.Options.SegmentBytes; 0: the wal's default, 64 MiB). Space is
	// reclaimed behind compaction a whole segment at a time, so a log kept
	// small wants small segments.
	WALSegmentBytes int64
	// WALPlainSync makes the wal flush with the fdatasync system call
	// instead of through io_uring (wal.Options.PlainSync).
	WALPlainSync bool
	// MaxValueBytes bounds one command passed to Propose.
	MaxValueBytes int
	// BatchMaxBytes bounds the commands the leader packs into one value.
	BatchMaxBytes int
	// BatchLinger is how long a busy leader waits for more commands before
	// it proposes a partial batch. An idle leader proposes at once.
	BatchLinger time.Duration
	// Window is how many instances the leader keeps in flight (capped at
	// Alpha, the membership activation distance).
	Window int
	// HeartbeatInterval is the engine's tick: retransmits, election
	// timeouts and batch retries count in it. The leader's heartbeat goes
	// every heartbeatTicks ticks (a fifth of ElectionTimeout, at least one
	// tick): each costs a message and its answer per peer, and
	// five per election timeout still leave a follower four to miss.
	HeartbeatInterval time.Duration
	// ElectionTimeout is how long a follower waits without hearing the
	// leader before it runs phase 1 (randomized in [T, 2T)).
	ElectionTimeout time.Duration
	// Thrifty: the leader asks only as many followers to vote on an
	// instance as it needs for a majority (those that answered most
	// recently); the others get the entries marked NoVote, once chosen and
	// with the chosen index, and store them without a sync of their own. It
	// saves one disk sync per instance per spare follower, and a message. An instance still open on the usual retransmit (two
	// heartbeat intervals) goes to every member for a vote, and a voter
	// that sent no vote at all meanwhile is replaced by a spare.
	Thrifty bool
	// FetchMaxBytes bounds one catch-up reply.
	FetchMaxBytes int
	// MaxIndexAhead bounds how far above its chosen index a node stores an
	// instance a peer sends (an Accept's entries; a Promise's, above the
	// higher of both chosen indexes). A message beyond it is dropped (see
	// "Hostile input" in doc.go): a leader keeps at most Window instances
	// in flight, so only a node lagging this far (it fetches, then votes
	// again) or a forged message goes there. At least 1024.
	MaxIndexAhead uint64
	// SnapshotEvery is how many applied entries pass between persisted
	// (applied, snapshot) pairs; Stop persists one too. Entries applied
	// after the last one are re-applied to the restored snapshot at start.
	SnapshotEvery int
	// CompactBase, if set, says whether a persisted snapshot (the state
	// machine's part, as Base returns it) may become the log's base in a
	// compaction; Compact then rounds down to the
	// newest checkpoint it accepts (binlogd refuses one taken inside a
	// split transaction: its replicas could not be served from there).
	CompactBase func(snap []byte) bool
	// ReadTailBytes bounds the values of the newest applied entries kept
	// in memory for ReadNext (readtail.go); 0 turns the tail off, so
	// every read goes to storage.
	ReadTailBytes int
	// DigestRange is the size of the index ranges whose log digests the
	// nodes exchange to detect a forked log (digest.go); 0 means
	// DefaultDigestRange. Nodes compare only ranges of equal bounds, so
	// nodes configured differently compare nothing (and say nothing).
	DigestRange uint64
	// Logger receives the engine's logs (slog.Default() if nil).
	Logger *slog.Logger
}

// DefaultMaxIndexAhead is Config.MaxIndexAhead's default: 65536
// instances, a thousand windows.
const DefaultMaxIndexAhead = 1 << 16

// DefaultConfig returns a Config with every field but ID, Peers and Dir set.
func DefaultConfig() Config {
	return Config{
		MaxValueBytes:     1 << 20,
		BatchMaxBytes:     256 << 10,
		BatchLinger:       500 * time.Microsecond,
		Window:            64,
		Thrifty:           true,
		HeartbeatInterval: 50 * time.Millisecond,
		ElectionTimeout:   500 * time.Millisecond,
		FetchMaxBytes:     1 << 20,
		MaxIndexAhead:     DefaultMaxIndexAhead,
		SnapshotEvery:     1000,
		ReadTailBytes:     32 << 20,
		DigestRange:       DefaultDigestRange,
	}
}

// Validate reports the first bad field by name.
func (c Config) Validate() error {
	bad := func(field, format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrBadConfig, field, fmt.Sprintf(format, a...))
	}
	switch {
	case c.ID == 0:
		return bad("ID", "must be nonzero")
	case len(c.Peers) == 0:
		return bad("Peers", "empty")
	case len(c.Peers) > 64:
		return bad("Peers", "%d members, at most 64", len(c.Peers))
	case c.MaxValueBytes <= 0:
		return bad("MaxValueBytes", "must be positive, got %d", c.MaxValueBytes)
	case c.BatchMaxBytes <= 0:
		return bad("BatchMaxBytes", "must be positive, got %d", c.BatchMaxBytes)
	case c.BatchLinger < 0:
		return bad("BatchLinger", "negative")
	case c.Window <= 0:
		return bad("Window", "must be positive, got %d", c.Window)
	case c.HeartbeatInterval <= 0:
		return bad("HeartbeatInterval", "must be positive")
	case c.ElectionTimeout < 3*c.HeartbeatInterval:
		return bad("ElectionTimeout", "%v must be at least 3 x HeartbeatInterval (%v)", c.ElectionTimeout, c.HeartbeatInterval)
	case c.FetchMaxBytes <= 0:
		return bad("FetchMaxBytes", "must be positive, got %d", c.FetchMaxBytes)
	case c.MaxIndexAhead < 1024 || c.MaxIndexAhead > 1<<32:
		return bad("MaxIndexAhead", "%d, must be in [1024, 1<<32]", c.MaxIndexAhead)
	case c.SnapshotEvery <= 0:
		return bad("SnapshotEvery", "must be positive, got %d", c.SnapshotEvery)
	case c.ReadTailBytes < 0:
		return bad("ReadTailBytes", "negative")
	case c.DigestRange > maxDigestRange:
		return bad("DigestRange", "%d, at most %d", c.DigestRange, maxDigestRange)
	}
	if _, ok := c.Peers[c.ID]; !ok {
		return bad("Peers", "lacks this node's ID %d", c.ID)
	}
	for _, id := range c.Learners {
		if _, ok := c.Peers[id]; !ok {
			return bad("Learners", "node %d is not in Peers", id)
		}
	}
	if !c.Join && len(c.Learners) > 0 && len(c.Peers) <= len(c.Learners) {
		return bad("Learners", "every initial member is a learner: at least one must vote")
	}
	for id, addr := range c.Peers {
		if id == 0 {
			return bad("Peers", "id 0 is reserved")
		}
		if addr == "" {
			return bad("Peers", "empty address for id %d", id)
		}
	}
	return nil
}

func (c Config) coreConfig(seed int64, seqStart uint64) coreConfig {
	et := max(int(c.ElectionTimeout/c.HeartbeatInterval), 3)
	peers := make([]uint32, 0, len(c.Peers))
	for id := range c.Peers {
		peers = append(peers, id)
	}
	slices.Sort(peers)
	return coreConfig{
		ID:              c.ID,
		Peers:           peers,
		Addrs:           c.Peers,
		Learners:        slices.Clone(c.Learners),
		Join:            c.Join,
		ElectionTicks:   et,
		HeartbeatTicks:  heartbeatTicks(et),
		RetransmitTicks: 2,
		RetryTicks:      2 * et,
		Window:          c.Window,
		Thrifty:         c.Thrifty,
		BatchMaxBytes:   c.BatchMaxBytes,
		FetchMaxBytes:   c.FetchMaxBytes,
		MaxValueBytes:   c.MaxValueBytes,
		MaxIndexAhead:   c.MaxIndexAhead,
		Seed:            seed,
		SeqStart:        seqStart,
	}
}

// heartbeatTicks is the leader's heartbeat period in ticks for an
// election timeout of et ticks: et/5, at least 1. Idle, heartbeats and
// their answers were most of a node's wake-ups (ten a second per peer
// and side at the default 50 ms tick); a follower still hears five per
// election timeout, and failure detection (the timeout, in ticks) is
// unchanged.
func heartbeatTicks(et int) int { return max(1, et/5) }
