// Package wal is the durable state of a Paxos acceptor and learner, kept in
// Badger: the promised ballot, the accepted (ballot, value) of every
// instance, the chosen index, and the applied index with the state
// machine's snapshot taken right after it.
//
// Contract (used by package paxos):
//
//	Open(dir, opts) (*Log, error)
//	(*Log).HardState() HardState               // as of the last answered write
//	(*Log).Save(Update) error                  // atomic + durable (Update.NoSync: lazily); concurrent callers; group-committed
//	(*Log).SaveAsync(Update) <-chan error       // Save without the wait; answered in submission order
//	(*Log).Split(Update) []Update               // parts that each fit one Save, for updates over one transaction
//	(*Log).SaveApplied(applied uint64, snapshot []byte) error
//	(*Log).Get(index) (Accepted, bool, error)  // bool=false: nothing accepted there
//	(*Log).Range(from, to uint64, maxBytes int) ([]Accepted, error) // ascending, [from, to]
//	(*Log).LastIndex() uint64                   // highest index with an accepted value
//	(*Log).TruncateBelow(index uint64) error     // drop instances < index, by range
//	(*Log).TruncateWithBase(index, base) error   // same, storing the snapshot after index-1 (HardState.Base)
//	(*Log).InstallSnapshot(index, snap) error    // a peer's snapshot: applied = index, log starts at index+1
//	(*Log).Close() error
//	(*Log).Stats() Stats                        // counters: saves, groups, syncs, rotations
//
// # Write path
//
//	RPC handler ─ Save(u) ─┐  encode records + CRC32C in the caller
//	RPC handler ─ Save(u) ─┼─▶ queue ─▶ commit goroutine:
//	RPC handler ─ Save(u) ─┘     1. take queued ops (≤ MaxGroupOps) that fit ONE Badger txn
//	                             2. txn: accepted records + max(promised), max(chosen), applied
//	                             3. txn.Commit()   (Badger: SyncWrites=false, memtable WAL)
//	                             4. hand the group to a sync goroutine; go to 1 for the next
//	                          sync goroutine: fdatasync the memtable file the txn went to
//	                          completer (in group order): publish HardState, answer the ops
//
// A Save returns only after its group's sync, and after every earlier
// group was answered, so a caller may answer its RPC ("persist before
// send"), and SaveAsync callers see durability in submission order. Up
// to MaxSyncsInFlight (4) groups are written and syncing at once: while
// group k syncs, group k+1 is written and starts its own sync, so a Save
// arriving mid-sync no longer waits for that sync to end before its own
// begins (this disk sustains 2-4x more fsyncs/s with 2-4 in flight). With
// MaxSyncsInFlight=1 it is the classic one-sync-at-a-time group commit.
//
// # Pipelined syncs: why they are safe
//
// Badger's own Sync covers only the CURRENT memtable's WAL file, takes a
// lock that blocks every write meanwhile, and a memtable "rotation" (a
// new NNNNN.mem, when the current one is full) leaves the old file
// unsynced until its background flush. Hence three rules:
//
//  1. Each group syncs the very file it was written to: the commit
//     goroutine notes Badger's current memtable file after each write (a
//     stat of the next file number tells whether that write rotated), and
//     the sync goroutine fdatasyncs that file by path. That is what
//     Badger's msync(MS_SYNC) does on Linux (msync is a datasync of the
//     file range); a file that is gone was flushed to a synced table.
//  2. A group is written while others are in flight only if its write
//     cannot rotate the memtable: memtable.go keeps an upper bound on the
//     current memtable's fill (arena and file, per Badger v4's layout) and,
//     once that bound reaches MemTableSize, waits for every group in
//     flight before writing. So groups in flight share one file, in
//     write order. TestFillBoundHolds checks the bound against Badger.
//  3. Badger replays a memtable file in order and stops at the first torn
//     or incomplete transaction, so after a crash group k+1 survives only
//     if group k does. This matters because groups depend on earlier
//     ones: a chosen index in k+1 covers accepts written by k.
//
// Lazy groups (every op NoSync, or raising only Chosen) are written in
// order like the rest but skip the fdatasync: the next synced group in
// the same file makes them durable (rule 3). To keep them from being
// left behind in an old file, a write that may rotate the memtable (and
// a truncation) first fdatasyncs the current file if the last group
// written was lazy; a lazy group with a value-log value is synced like
// any other. Lazy bytes are bounded too (Options.LazySyncBytes): the
// lazy group that reaches the bound is synced, so a node whose saves are
// all lazy writes to disk in small steps, not in one burst that stalls
// its peers' syncs on a shared disk. The paxos engine saves lazily what it stores without
// voting for it (thrifty phase 2) and its chosen index: a crash may roll
// those back, never past a synced group.
//
// A group that puts a value in Badger's value log (a value or snapshot
// above the inline threshold) also waits for the groups in flight and is
// synced with Badger's Sync (which covers the value log). Truncation
// waits for the groups in flight too. Groups are answered strictly in
// order; if one fails, it and every later one fail (see below).
//
// A group is exactly one Badger transaction because Badger's Sync covers
// only the current memtable's WAL and a transaction goes into one memtable
// whole. One transaction also makes every Save atomic: Badger replays a
// transaction whole or not at all. A queue that does not fit one
// transaction becomes several groups.
//
// Monotonic guards: Save never lowers Promised or Chosen and SaveApplied
// never lowers Applied; a lower value is IGNORED (HardState keeps the
// maximum) rather than rejected, because reordered and duplicated
// messages make stale values normal, and the rest of the update is still
// written. SaveApplied raises Chosen to the applied index (applied implies
// chosen), keeping the invariant Applied <= Chosen. Accepted records below
// FirstIndex are ignored: those instances are chosen and compacted, and
// storing them would resurrect truncated data. Whether an accepted ballot
// may replace the stored one is the acceptor's decision, not the log's.
//
// If a commit or sync fails, what is on disk is unknown (the records may
// be in the memtable, visible to reads, yet not durable), so the Log
// turns sticky-failed: that group and every later call get ErrFailed.
// Reopening recovers whatever Badger made durable.
//
// # Key layout
//
//	'a' | bucket(8) | index(8)   accepted record; bucket = index >> 12 (4096 instances)
//	'm/format'                   "phxgo-wal"; written when the directory is created
//	'm/promised'                 ballot
//	'm/chosen'                   index
//	'm/applied'                  index + snapshot
//	'm/first'                    FirstIndex (1 on a fresh log)
//
// Integers are big-endian so Badger's byte order is numeric order: Range is
// one forward iterator from the key of `from` (values prefetched), and
// LastIndex comes from one reverse seek at Open.
//
// # Record format and corruption
//
// Every value is
//
//	version(1)=1 | kind(1) | payload | crc32c(4, big-endian)
//
// and the CRC32C covers the key as well as version, kind and payload, so a
// torn write, a flipped bit, or a record stored under the wrong key fails
// the check; version, kind and the payload's inner length fields are
// checked too. A failed check is an error wrapping ErrCorrupt that names
// the instance ("instance 5") or metadata key ("m/chosen"); the data is
// never returned. Get and Range report it per read; a corrupt metadata
// record, a missing format record in a non-empty database, or broken
// invariants (Applied > Chosen, FirstIndex-1 > Applied) make Open fail,
// since HardState() has no error to carry. Badger's own block checksums
// sit below this; ours also catch what a bug or a copy tool writes.
//
// # Truncation
//
// TruncateBelow(i) requires i <= Applied+1 (the snapshot must cover what is
// dropped). It runs in the commit goroutine between groups: it first
// writes and syncs m/first = i together with m/base (the state machine's
// snapshot after i-1 given to TruncateWithBase, empty otherwise; Open
// checks the two agree; InstallSnapshot also raises m/applied and
// m/chosen in that same transaction), so from then on Get/Range below i return
// ErrCompacted and a crash at any later point is harmless; then, at a
// cheap moment (reclaim.go) or on ReclaimNow, it drops
// every non-empty bucket wholly below i with Badger's DropPrefix, up to 64
// prefixes per call, finding them by seeking bucket to bucket, so empty
// stretches cost one seek. Why DropPrefix and not deletes: a delete per
// instance writes one tombstone per instance into the WAL, memtable and
// every LSM level until compaction meets them, and makes iterators skip
// them; DropPrefix removes the memtable entries while flushing and drops
// or rewrites only the tables holding the prefix, with no tombstones. It
// blocks Badger writes while it runs, which is why it runs in the commit
// goroutine (queued Saves wait), and why it waits for a moment when
// Badger has little left to flush and compact. Instances of the
// bucket holding i that lie below i stay on disk, invisible, until a later
// truncation passes their whole bucket; if a drop fails it is logged and
// retried later, since FirstIndex is already durable.
//
// # Reads and lifetime
//
// Get and Range read Badger directly and concurrently with writes. They
// may see a Save's records before that Save returns (they are durable once
// it does); HardState only ever shows durable state. Open takes an
// exclusive flock on dir/wal.lock before opening Badger, so a second Log
// on the same directory, in this or another process, fails with ErrLocked.
// Close lets queued writes finish, then closes Badger; later calls get
// ErrClosed.
//
// Badger settings: SyncWrites=false (we sync per group),
// NumVersionsToKeep=1, no conflict detection (one writer), 32 MiB
// memtables (one transaction may hold 15% of one; at 16 MiB, paxosbench's
// 64-client p99 was 12-17 ms against 8-9 ms at 32 MiB, from the writes
// that wait out a memtable rotation), Badger's log routed to slog at
// warning level. Values stay inline in the LSM tree up to the largest
// threshold Badger allows (1 MiB with 32 MiB memtables), so
// truncation and compaction reclaim them. Larger values and snapshots go
// to Badger's value log, which this package does not garbage-collect:
// Badger's value-log GC rewrites live values with unsynced writes and then
// deletes the old file, which with SyncWrites=false could lose them in a
// machine crash. Keep values below the threshold (MaxInlineValue; binlogd
// cuts its entries at half of it).
//
// Large values cost more than their bytes here: each one is copied into
// the memtable's file and arena through fresh mappings, then into a table
// at the flush and again at compaction, and on this project's VM a
// first-touch page costs more than the copy. A serial Save of 64 KiB took
// 2.5 ms (27 MB/s) where a write and fdatasync of 64 KiB took 0.4-0.7 ms.
// paxosbench -value 65536 reaches about 150-200 commits/s (10-13 MB/s per
// node), below hashicorp/raft (about 1,000/s) and etcd (about 500/s) on
// the same machine.
package wal
