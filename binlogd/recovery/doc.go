// Package recovery cuts a crashed MariaDB's binlog back to what the
// Paxos log holds, before mysqld starts again.
//
//  1. Scan: read the local binlog files named in binlog.index and list
//     every GTID group (GTID, file, start and end offsets, complete or torn).
//  2. Ask: the caller asks the cluster which of these GTIDs are chosen and
//     valid (binlogd's Admin.RecoverPoint; if this node holds the current
//     term, a Fence is chosen first so none of its batches can become valid
//     later).
//  3. Cut: truncate the file at the start of the first group that is not
//     valid, mark it in use, remove every later binlog file, rewrite
//     binlog.index atomically.
//
// Marking in use (LOG_EVENT_BINLOG_IN_USE_F in the file's format
// description) matters when MariaDB had rotated away from the cut file: it
// cleared the flag then, and a newest binlog without the flag makes it skip
// crash recovery and refuse to start with the cut transactions prepared
// (issue 20.4, TestCutIntoRotatedFileRollsBack). The flag is outside the
// event's checksum. The file's Binlog_checkpoint events name only it or
// older files, all kept, so recovery's scan finds every file it needs.
//
// At the next start InnoDB's XA recovery rolls back exactly the prepared
// transactions whose XID is no longer in the binlog: a transaction commits
// iff it is in the log. A transaction InnoDB already committed (after a
// graceful shutdown with commits waiting) cannot be undone by a cut;
// CutAfterCleanShutdown detects that (the binlog was closed cleanly) so
// the node is reseeded instead of rejoining with a fork.
//
// DDL is not transactional: MariaDB applies it before the semi-sync wait,
// and most DDL survives a cut (measured in TestDDLCutSurvives). Scan reads
// each group's FL_TRANSACTIONAL flag; a plan that cuts a group without it
// is refused by NonTransactionalCut and binlogd marks the node UNSAFE
// (reseed needed). DDL is allowed: a DDL cut at recovery costs that one
// node a reseed, never a fork, and no acknowledged DDL is lost because the
// client's OK waits for the log. Writes to non-transactional engines are
// refused up front (enforce_storage_engine=InnoDB, package mysqld).
//
// Files this package rewrites in the datadir (binlog.index) keep their
// owner: mariadbd runs as its own OS user, binlogd usually as root.
package recovery
