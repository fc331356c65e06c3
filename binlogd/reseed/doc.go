// Package reseed copies a replica's MariaDB to a new or broken node with
// the tool made for it, mariadb-backup, instead of a logical dump: a
// physical copy moves InnoDB's pages at disk speed and needs no
// re-insert, no index rebuild and no replay of the log, so it stays
// practical at real data sizes (see README "Adding a node" for figures).
//
// The source side (Serve, run by the Admin/Backup RPC of a replica's
// binlogd, binlogd/node/backup.go) runs
//
//	mariadb-backup --defaults-file=<node my.cnf> --backup --stream=xbstream --slave-info
//
// as binlogd's unix-socket admin account and streams its stdout in 1 MiB
// chunks over the node's mTLS gRPC port. The first message carries an
// estimate of the size (the datadir without binlogs and relay logs), the
// source node and its MariaDB version. A failure of the tool reaches the
// client as the RPC's error, with the tail of the tool's stderr.
//
// The client side (Receive, run by `binlogd reseed` on the node to be
// reseeded, with its binlogd stopped) extracts the stream with
// `mbstream -x` into a NEW directory next to the datadir, printing bytes,
// rate and ETA every second, runs `mariadb-backup --prepare` on it, flushes
// every file and directory of it to disk (durable.go), reads the
// position of the copied data and only then swaps it in: the old
// datadir is kept as <datadir>.old-<time> (or removed when asked). A
// failed or interrupted reseed therefore leaves the old datadir where it
// was and removes its partial copy; it needs room for both copies.
//
// The stream is a peer's and bounded by what the receiver checks itself
// (bound.go): no bytes for Target.Stall fails it (ErrStalled), and so
// does the disk it is written to running into Target.MinFree (ErrNoRoom).
// The source's size estimate bounds nothing (a liar sends what it likes,
// and an honest backup grows past it); it only feeds progress and a
// warning. The source flushes a partial chunk after a second, so the
// stall clock measures its tool's silence, not a chunk filling up.
//
// The position: mariadb-backup takes the copy's end under BACKUP STAGE
// BLOCK_COMMIT and writes xtrabackup_binlog_info ("file pos gtid"), whose
// GTID is the source's @@gtid_current_pos at that point, and, with
// --slave-info, xtrabackup_slave_info (its @@gtid_slave_pos). A phxgo
// replica runs log_slave_updates and gtid_strict_mode, so its
// gtid_current_pos is every transaction in the copied data, including
// those it wrote itself while it was master (gtid_slave_pos misses those).
// Position therefore prefers the binlog info and falls back to the slave
// info. The caller (cmd/binlogd/reseed.go) starts the copy once, sets
// gtid_slave_pos to it and stops it cleanly, so the node's MariaDB
// replicates from its binlogd exactly after the copied data. The copy has
// no binlog of its own (mariadb-backup does not copy binlogs), so the
// node's recovery has nothing to cut.
//
// Backups (backup.go): WriteBackup keeps the same stream as a directory
// (`binlogd backup`), extracted and prepared by the same steps as Receive
// and finished by a manifest (phxgo-backup.json: position, source, time),
// written last so a directory without it is no backup. RestoreDir copies
// such a directory beside a datadir and swaps it in as Receive does
// (`binlogd restore`); the backup stays, so it can make several nodes,
// e.g. every member of a cluster rebuilt after a lost majority.
package reseed
