// Package wal is the durable state of a Paxos acceptor and learner: the
// promised ballot, the accepted (ballot, value) of every instance, the
// chosen index, and the applied index with the state machine's snapshot
// taken right after it. Its write-ahead log is its own segment files;
// Badger indexes them and holds the metadata.
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
//	(*Log).Stats() Stats                        // counters: saves, groups, syncs, segments, rotations
//
// # Write path
//
//	RPC handler ─ Save(u) ─┐  encode records + CRC32C in the caller
//	RPC handler ─ Save(u) ─┼─▶ queue ─▶ commit goroutine:
//	RPC handler ─ Save(u) ─┘     1. take queued ops (≤ MaxGroupOps) that fit ONE Badger txn
//	                             2. frame them (accepted records + max(promised), max(chosen), applied)
//	                             3. append the frame to the current segment file (a raw
//	                                pwrite, pwrite.go)
//	                             4. hand the group to a sync goroutine; go to 1 for the next
//	                          sync goroutine: fdatasync the segment, through io_uring
//	                             where the kernel allows (syncer.go: no thread waits in
//	                             the flush, and the runtime's sysmon sleeps on)
//	                          completer (in group order): hold the group (its records
//	                             readable from memory), publish HardState, answer the
//	                             ops; every ApplyGroups (16) durable groups, apply the
//	                             held frames to Badger (one txn, accepted records as
//	                             references into the segment, m/segpos = the last
//	                             frame's end)
//
// The segments (NNNNNNNNNNNNNNNN.seg, segment.go) are the write-ahead log;
// Badger is the index over them and the home of the metadata, and is
// never synced per group. Why not Badger's own write-ahead file: every
// value would be copied into Badger's memtable file and arena, then into
// a level-0 table when the memtable filled, then again at each
// compaction, and the flush of a full memtable, on the three nodes at
// once, takes the CPU for a second or more: it was the whole p99 tail
// (figures in the README, "Performance on one host"). Badger holds about
// 60 bytes per instance.
//
// A Save returns only after its group's sync, with the group readable
// (from Badger or from the held groups), and after every earlier group
// was answered, so a caller may
// answer its RPC ("persist before send"), and SaveAsync callers see
// durability in submission order. Up to MaxSyncsInFlight (4) groups are
// written and syncing at once: while group k syncs, group k+1 is written
// and starts its own sync (a disk sustains more fsyncs per second with
// several in flight). An fdatasync covers every earlier write to the file, so the
// groups that survive a power cut are always a prefix of those written.
//
// # Crash recovery
//
// Badger receives a frame only after the frame is durable, so Badger never
// holds what the segments lost; it may hold less (the held groups, up to
// ApplyGroups of them, are in memory only until their apply). Open replays every frame
// after m/segpos (replay.go), after an fdatasync of the segments it reads:
// a process crash leaves written frames in the page cache, whole but not
// yet on disk, and Badger must not keep them where a later power cut
// could lose the segment's copy. For that to be enough, what Badger keeps must
// be the effect of a PREFIX of the applied frames: Badger replays each
// memtable file up to its first torn transaction, every file on its own, so
// an apply that may start a new memtable (memtable.go keeps an upper bound
// on the current one's fill, per Badger v4's layout) first fdatasyncs the
// current one. TestFillBoundHolds checks the bound against Badger.
//
// Where a segment's frames stop before the end of its file (a frame that
// is not whole and intact: length, CRC32C, its own segment and offset; or
// zeros), Open looks for a valid frame further on (scan.go: every later
// offset whose bytes name this segment and that offset is checked in
// full). If one follows, the bad bytes are damage, not a torn write (a
// crash only loses the unsynced END of the newest segment, and the frames
// after the damage may hold answered promises and votes): Open refuses
// with a *DamageError (ErrCorrupt) naming the file, the byte offset, what
// is there and where valid frames resume, in any segment. If nothing
// valid follows, in the newest segment it is a torn tail: never answered,
// logged and cut off; in an older segment (synced before the next one
// began) bad bytes are ErrCorrupt and zeros are logged and left. The scan
// runs only at Open and only where frames stop early. Inspect and Repair
// (repair.go; binlogd wal-repair) report damage offline and, when the
// operator says so, cut the log at a frame boundary before it (refusing
// where Badger already holds what lies beyond). A cut forgets promises and
// votes: the node must not vote again as if it remembered them (reseed it).
// Whatever is missing or bad under what Badger holds (before m/segpos, or
// where its references point) was answered: Inspect reports it as damage
// however it looks, a missing segment or zeros included; only bytes after
// everything Badger holds can be a torn tail. Inspect and OpenReadOnly
// (binlogd log) write nothing in the directory; a damaged Badger table
// is ErrCorrupt naming the file, not Badger's panic (badgeropen.go).
//
// Lazy groups (every op NoSync, or raising only Chosen) are written in
// order like the rest but skip the fdatasync: the next synced group in the
// same segment makes them durable, and a new segment starts only after
// the lazy groups in the old one are synced. Until a sync covers them they
// are answered but not applied to Badger (a crash could otherwise leave
// Badger ahead of the segments); Get and Range serve their records from
// memory meanwhile. Lazy bytes are bounded too (Options.LazySyncBytes): the
// lazy group that reaches the bound is synced, so a node whose saves are
// all lazy writes to disk in small steps, not in one burst that stalls its
// peers' syncs on a shared disk. The paxos engine saves lazily what it
// stores without voting for it (thrifty phase 2) and its chosen index: a
// crash may roll those back, never past a synced group.
//
// # Segment collection
//
// When a segment fills (Options.SegmentBytes, 64 MiB) the commit goroutine
// waits for the groups in flight and starts the next one. After each
// truncation, and at each new segment, it deletes every older segment that Badger has wholly applied and whose highest
// instance (m/segmax/<id>) is below FirstIndex, after making Badger durable
// (every memtable file, then Badger's Sync): nothing refers to those
// segments any more. So a log that is truncated keeps about the segments
// since its FirstIndex, and values of any size are reclaimed.
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
// If a write, sync or apply fails, what is on disk is unknown, so the Log
// turns sticky-failed: that group and every later call get ErrFailed.
// Reopening recovers whatever the segments made durable. A full disk is
// caught before it is hit (space.go): under Options.MinFreeBytes (256 MiB)
// free, the next group fails with ErrDiskFull and the Log is failed the
// same way, and Open refuses, because Badger writes through memory
// mappings, where running out of space is a SIGBUS, not an error.
//
// # Key layout
//
//	'a' | bucket(8) | index(8)   accepted record's reference into a segment (or, in a log
//	                             written before segments existed, the record itself);
//	                             bucket = index >> 12 (4096 instances)
//	'm/format'                   "phxgo-wal"; written when the directory is created
//	'm/promised'                 ballot
//	'm/chosen'                   index
//	'm/applied'                  index + snapshot
//	'm/first'                    FirstIndex (1 on a fresh log)
//	'm/segpos'                   segment and offset after the last frame applied
//	'm/segmax/' | segment(8)     the highest instance a segment holds
//	'm/membership'               present once the engine saved a membership history
//	                             (Update.MarkMembership; written in a frame: membership.go)
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
// never returned. A reference's record is checked the same way when it is
// read from its segment, so a reference to the wrong place fails too. Get and Range report it per read; a corrupt metadata
// record, a missing format record in a non-empty database, or broken
// invariants (Applied > Chosen, FirstIndex-1 > Applied) make Open fail,
// since HardState() has no error to carry. Badger's own block checksums
// sit below this; ours also catch what a bug or a copy tool writes.
//
// # Truncation
//
// TruncateBelow(i) requires i <= Applied+1 (the snapshot must cover what is
// dropped). It runs in the commit goroutine between groups: it first
// writes m/first = i to Badger together with m/base (the state machine's
// snapshot after i-1 given to TruncateWithBase, empty otherwise; Open
// checks the two agree; InstallSnapshot also raises m/applied and
// m/chosen in that same transaction) and makes Badger durable with
// everything applied before (so Open's replay never starts before a
// truncation), so from then on Get/Range below i return
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
// Get and Range read Badger, and the record from its segment, directly
// and concurrently with writes (and a lazy group's records from memory).
// They look in memory first: a lazy group leaves memory only after Badger
// has it, so a read that overlaps its apply finds it in one of the two.
// They may see a Save's records before that Save returns (they are durable
// once it does); HardState only ever shows durable state. Open takes an
// exclusive flock on dir/wal.lock before opening Badger, so a second Log
// on the same directory, in this or another process, fails with ErrLocked.
// Close lets queued writes finish, then closes Badger; later calls get
// ErrClosed.
//
// Badger settings: SyncWrites=false (the segments are the write-ahead
// log), NumVersionsToKeep=1, no conflict detection (one writer), 32 MiB
// memtables, Badger's log routed to slog at warning level. Snapshots
// (m/applied, m/base) stay inline in Badger up to 1 MiB; larger ones go to
// Badger's value log, which this package does not garbage-collect:
// Badger's value-log GC rewrites live values with unsynced writes and then
// deletes the old file, which could lose them in a machine crash.
package wal
