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
//     valid, remove every later binlog file, rewrite binlog.index atomically.
//
// At the next start InnoDB's XA recovery rolls back exactly the prepared
// transactions whose XID is no longer in the binlog: a transaction commits
// iff it is in the log. A transaction InnoDB already committed (after a
// graceful shutdown with commits waiting) cannot be undone by a cut;
// CommittedPastCut detects that from the error log so the node is reseeded
// instead of rejoining with a fork.
package recovery
