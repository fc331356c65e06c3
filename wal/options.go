package wal

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// Options tune a Log. The zero value is valid and means the defaults.
type Options struct {
	// Logger receives Badger's warnings and errors and the Log's own
	// events. nil: slog.Default(). Badger's info/debug chatter is dropped.
	Logger *slog.Logger
	// MemTableSize is Badger's memtable size in bytes (0: 32 MiB, minimum
	// 4 MiB). One Badger transaction may hold 15% of it, so it also bounds
	// the bytes one Save may carry below the value-log threshold.
	MemTableSize int64
	// MaxGroupOps bounds how many Save/SaveApplied calls share one sync
	// (0: 1024).
	MaxGroupOps int
	// MaxSyncsInFlight bounds how many groups may be written and syncing
	// at once (0: 4; 1: each group is synced before the next is written).
	MaxSyncsInFlight int
	// LazySyncBytes bounds the bytes of lazy groups (Update.NoSync, or
	// Chosen only) written to the current segment but not yet synced: the
	// lazy group that reaches it is synced like any other (0: 256 KiB;
	// negative: no bound, lazy groups wait for the next synced write).
	// Why a bound: a node whose saves are all lazy (a thrifty spare)
	// otherwise flushes megabytes at its next synced write, and that
	// burst stalls every other sync on the disk, its peers' included.
	LazySyncBytes int64
	// ReclaimDelay bounds how long the disk space of a truncation waits
	// for a cheap moment to be reclaimed (reclaim.go): Badger's DropPrefix
	// blocks every write while it flushes and compacts (0: 1 minute;
	// negative: reclaim at once). The truncation itself is durable and
	// visible at once either way; ReclaimNow reclaims on demand.
	ReclaimDelay time.Duration
	// SegmentBytes is the size at which a segment file (the log's own
	// write-ahead file, see doc.go) is closed and a new one started; whole
	// segments are deleted once truncation passes every instance in them
	// (0: 64 MiB, minimum 4 KiB).
	SegmentBytes int64
	// MinFreeBytes is the free space the log's filesystem must keep: a
	// write that finds less fails the Log with ErrDiskFull, and Open
	// refuses (space.go says why: Badger writes through memory mappings,
	// where a full disk is a SIGBUS, not an error). 0: 256 MiB; negative:
	// no check.
	MinFreeBytes int64
	// ApplyGroups is how many durable groups are held in memory before
	// they go into Badger together, in one transaction (0: 16; 1: each
	// group at once). They are readable meanwhile, and Open replays
	// whatever Badger lacks from the segments; applyHeldBytes of frames
	// are applied whatever the count.
	ApplyGroups int
	// NoSync skips the fsync of each group: a Save is then durable against
	// a process crash but not a machine crash. For simulations and
	// benchmarks only.
	NoSync bool
	// PlainSync flushes segments with the fdatasync system call even
	// where the kernel offers io_uring (syncer.go says why the ring is
	// the default: it keeps binlogd's threads and the runtime's sysmon
	// out of the flush). For an operator who distrusts the ring, and for
	// tests of both paths; the flush and its durability are the same.
	PlainSync bool
	// Knobs are testing hooks; nil in production.
	Knobs *TestingKnobs
}

// TestingKnobs are hooks for tests, all nil by default.
type TestingKnobs struct {
	// BeforeSync runs in a group's sync goroutine after its frame is
	// written to the segment and before its sync; ops is the number of
	// calls in the group. A non-nil error acts as a failed sync. Several
	// may run at once (Options.MaxSyncsInFlight).
	BeforeSync func(ops int) error
}

const (
	defaultMemTableSize = 32 << 20
	minMemTableSize     = 4 << 20
	defaultMaxGroupOps  = 1024
	defaultMaxSyncs     = 4
	defaultLazySync     = 256 << 10
	defaultReclaimDelay = time.Minute
	defaultSegmentBytes = 64 << 20
	minSegmentBytes     = 4 << 10
	defaultMinFree      = 256 << 20
	defaultApplyGroups  = 16
	// applyHeldBytes bounds the frames held unapplied (memory, and the
	// overlay a Range merges).
	applyHeldBytes = 1 << 20
)

func (o Options) withDefaults() (Options, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MemTableSize == 0 {
		o.MemTableSize = defaultMemTableSize
	}
	if o.MemTableSize < minMemTableSize {
		return o, fmt.Errorf("%w: Options.MemTableSize %d below %d", ErrInvalid, o.MemTableSize, minMemTableSize)
	}
	if o.MaxGroupOps == 0 {
		o.MaxGroupOps = defaultMaxGroupOps
	}
	if o.MaxSyncsInFlight == 0 {
		o.MaxSyncsInFlight = defaultMaxSyncs
	}
	if o.ReclaimDelay == 0 {
		o.ReclaimDelay = defaultReclaimDelay
	}
	if o.SegmentBytes == 0 {
		o.SegmentBytes = defaultSegmentBytes
	}
	if o.SegmentBytes < minSegmentBytes {
		return o, fmt.Errorf("%w: Options.SegmentBytes %d below %d", ErrInvalid, o.SegmentBytes, minSegmentBytes)
	}
	if o.MinFreeBytes == 0 {
		o.MinFreeBytes = defaultMinFree
	}
	if o.ApplyGroups == 0 {
		o.ApplyGroups = defaultApplyGroups
	}
	if o.ApplyGroups < 0 {
		return o, fmt.Errorf("%w: Options.ApplyGroups %d negative", ErrInvalid, o.ApplyGroups)
	}
	if o.LazySyncBytes == 0 {
		o.LazySyncBytes = defaultLazySync
	}
	if o.MaxSyncsInFlight < 0 {
		return o, fmt.Errorf("%w: Options.MaxSyncsInFlight %d negative", ErrInvalid, o.MaxSyncsInFlight)
	}
	if o.MaxGroupOps < 0 {
		return o, fmt.Errorf("%w: Options.MaxGroupOps %d negative", ErrInvalid, o.MaxGroupOps)
	}
	return o, nil
}

// valueThreshold: Badger values at least this large live in Badger's
// value log rather than inline in the LSM tree. Accepted values never
// reach Badger (segments hold them); this is for snapshots, as large as
// Badger allows (1 MiB, and a quarter of a transaction), because only
// inline values are reclaimed by compaction: the value log needs its own
// GC, which this package does not run (see doc.go).
func (o Options) valueThreshold() int64 {
	return min(1<<20, o.MemTableSize*15/100/4)
}

func (o Options) badger(dir string) badger.Options {
	return badger.DefaultOptions(dir).
		WithSyncWrites(false). // one explicit Sync per group instead
		WithNumVersionsToKeep(1).
		WithDetectConflicts(false). // one writer goroutine; no optimistic txns
		WithMetricsEnabled(false).
		WithLogger(badgerLogger{o.Logger}).
		WithMemTableSize(o.MemTableSize).
		WithNumMemtables(3).
		WithNumLevelZeroTables(4).
		WithNumLevelZeroTablesStall(12).
		WithValueThreshold(o.valueThreshold()).
		WithValueLogFileSize(64 << 20).
		WithBlockCacheSize(16 << 20).
		WithNumCompactors(2).
		WithNumGoroutines(2).
		WithCompression(options.None)
}

// badgerLogger routes Badger's log to slog at warning level and above.
type badgerLogger struct{ l *slog.Logger }

func (b badgerLogger) Errorf(f string, a ...any) {
	b.l.Error(fmt.Sprintf(f, a...), "component", "badger")
}

func (b badgerLogger) Warningf(f string, a ...any) {
	b.l.Warn(fmt.Sprintf(f, a...), "component", "badger")
}

func (b badgerLogger) Infof(string, ...any)  {}
func (b badgerLogger) Debugf(string, ...any) {}
