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
// They always start durable; binlogd relaxes a replica's fsyncs at run
// time (binlogd/role Relax) and makes it durable again before it takes
// writes. Options.ApplyThreads turns on optimistic parallel apply for
// when the server is a replica (binlogd uses 4).
//
// # Handing a running server to the next binlogd
//
// handoff.go: Handoff describes the running mariadbd (pid and process
// start time, datadir, pid file, socket, port, server id) after checking
// it is this instance's, read-only, with no commit waiting; SaveHandoff
// stores it durably, TakeHandoff reads it once. Adopt takes over only the
// very process a record names, started with this instance's my.cnf, whose
// server still says it is this instance's and read-only with nothing
// waiting; anything else is ErrNotAdoptable. KillOrphan SIGKILLs a
// mariadbd of this instance that no record names (a crashed binlogd's).
//
// # Who may do what (DESIGN.md, "Security model")
//
//	identity             how it logs in                      may
//	admin (AdminUser)    unix socket, unix_socket plugin:    everything (binlogd, tests,
//	                     the OS user this process runs as    seed, stop-mysql)
//	root@localhost       unix socket, OS root only           everything
//	capture              TCP, password                       REPLICATION SLAVE/CLIENT,
//	                                                         BINLOG MONITOR
//	app                  TCP, password                       DML/DDL in app_databases only
//	proxy                TCP, password                       SELECT on 6 columns of
//	                                                         mysql.user; SLAVE MONITOR
//	anyone else          refused: no anonymous account, no root at any other
//	                     host; a passwordless account is locked at every start
//
// The admin is authenticated by the socket peer's uid, so it has no
// password to steal and no TCP path. mariadb-install-db runs with
// --auth-root-authentication-method=socket --auth-root-socket-user=<OS
// user>: a binlogd running as root administers as root@localhost; one
// running as, say, phxgo gets phxgo@localhost (and mariadbd then runs as
// phxgo too, since only root can switch users). Start and Bootstrap
// repair a datadir from an older phxgo (passwordless root at four hosts,
// app granted on *.*, the proxy on mysql.*) with sql_log_bin=0, at every
// start: harden in admin.go, narrowGrants in accounts.go.
//
// The app account gets its privileges per app_databases pattern
// (appdb.go), never on *.*: MariaDB has no negative grants, and a db-level
// grant on '%' matches the mysql schema too (checked on 10.11), so a
// pattern that matches a system schema is refused.
//
// # The server process
//
// When this process is root, mariadbd runs as the mysql OS user
// (ServerOSUser, `user=` in my.cnf); the datadir, tmpdir and FilesDir are
// chowned to it at every Init, the instance dir is root:mysql 1771
// (sticky: mysql creates its socket, pid and log but cannot replace
// root's my.cnf), and ancestors mysql could not traverse get o+x
// (osuser.go). secure_file_priv is FilesDir (import/export confined to a
// directory of the instance; only the admin holds FILE); local_infile is
// ON (client-side LOAD DATA LOCAL: the client sends the data). enforce_storage_engine=InnoDB with NO_ENGINE_SUBSTITUTION: a
// MyISAM, Aria or MEMORY write is visible and durable before the
// semi-sync ACK and no binlog cut undoes it, so CREATE/ALTER ... ENGINE=
// anything else fails with 1290 ("running with the NO_ENGINE_SUBSTITUTION
// option"), temporary tables included; setting the session variable needs
// SUPER. A session that clears its own sql_mode gets InnoDB silently
// instead, which is as safe. DDL stays allowed: see package recovery for
// what a DDL cut at recovery costs.
package mysqld
