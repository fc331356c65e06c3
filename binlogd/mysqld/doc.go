// Package mysqld creates, starts and stops local mariadbd processes: one
// datadir, port and my.cnf per instance. binlogd uses it to supervise its
// node's MariaDB; tests, `make cluster`, the Jepsen harness and the
// benchmarks use it to run real servers on loopback.
//
// Every instance is configured the way phxgo needs a node's MariaDB
// (DESIGN.md, "Write path"): ROW binlog with sync_binlog=1 and
// innodb_flush_log_at_trx_commit=1, gtid_strict_mode, log_slave_updates,
// semi-sync master with AFTER_SYNC, wait_no_slave and the largest timeout.
// Semi-sync is left OFF in my.cnf: with wait_no_slave=ON the first write
// would block until a capture connects, so binlogd turns it on after it has
// bootstrapped its accounts. Instances start read_only with
// skip-slave-start: a node is a replica until binlogd says otherwise.
package mysqld
