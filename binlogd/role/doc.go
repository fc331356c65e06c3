// Package role switches a node's MariaDB between the two shapes phxgo
// allows, and reads back what it has applied.
//
//	replica: read_only=ON, replicating from its own binlogd's endpoint
//	         (CHANGE MASTER TO binlogd, MASTER_USE_GTID=current_pos);
//	         relaxed (Relax: sync_binlog=0, innodb_flush_log_at_trx_commit=2).
//	master:  durable and flushed first (MakeDurable), then replication
//	         stopped, semi-sync master ON, read_only=OFF.
//
// A relaxed replica's binlog and InnoDB can lose different tails in a
// host crash; ResyncBinlog resets the binlog to InnoDB's gtid_slave_pos
// (BecomeReplica records a demoted master's own transactions there), and
// replication fetches the rest again. Relay logs hold nothing of their
// own (the position is a GTID), so when MariaDB refuses CHANGE MASTER
// because the relay log its metadata names is gone (error 1201, after a
// power loss), BecomeReplica resets them (RESET SLAVE ALL) and follows on.
//
// read_only does not stop accounts holding SUPER or READ ONLY ADMIN, so
// client-facing accounts never hold them (see mysqld.Accounts).
//
// Between the two shapes, a master that served writes is released
// (quiet.go): semi-sync master off returns every waiting commit OK, so it
// is turned off only by ReleaseSemiSync, after CheckQuiet proved that
// read_only is on by a change that completed (ReadOnlyBarrier, bounded by
// lock_wait_timeout), no session waits for an ACK, every client statement
// still running was interrupted and has ended (interrupt.go: a DDL that
// passed its read_only check before the barrier runs after it), and
// gtid_binlog_pos is held by the log (re-read after the release). BecomeReplica refuses a server whose semi-sync master
// is still on (ErrSemiSyncOn). Why each check: binlogd/rolectl/doc.go.
package role
