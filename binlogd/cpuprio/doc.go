// Package cpuprio gives binlogd CPU priority over the MariaDB it
// supervises, and starts that MariaDB at a priority of its own.
//
// Why: binlogd is the node's Paxos acceptor and, on the master, its
// leader and binlog capture. Its work per commit is small, but it must
// run within milliseconds: a leader whose heartbeats wait too long makes
// the followers elect another leader, and every leader change costs a
// phase 1, re-proposed batches and a pause in commits. Measured on a 2-CPU
// host under 48 point-select threads and two CPU hogs (load average
// 40-46), a binlogd at the same nice as its MariaDB went without the CPU
// for up to 760 ms at a time: the Paxos leadership moved about 60 times
// in 4 minutes and the master had batches rejected for a broken chain.
// With binlogd's threads at nice -10 and MariaDB's at 0 it moved once.
// Under systemd, supervise_mysql keeps mariadbd in binlogd's cgroup, so
// there the two share one CPU weight and only nice divides it between
// them.
//
// Linux keeps a nice value per thread, and a new thread inherits its
// creator's: SetNice changes every thread of the process (the Go runtime
// clones later threads from these, or from its template thread), and
// Start forks a child from a thread of its own, set to the child's value
// and discarded afterwards. Lowering a nice value needs CAP_SYS_NICE
// (root); raising one does not. Helper processes (event hooks, reseed
// backups, mariadb-install-db) start through StartChild at the value
// SetChildNice gives them, MariaDB's: they are database work, and a
// backup at binlogd's raised value would take the CPU from the MariaDB
// serving clients.
package cpuprio
