// Package preflight is `binlogd check -config FILE`: it checks a node's
// host against its config before the first start, so an operator meets
// every problem at once, each with the command or config change that
// fixes it, instead of one at a time in binlogd's log.
//
//	config ──▶ env.Config ──┬─▶ MariaDB    mariadbd, mariadb-install-db, version (10.11 ok, 10.6+ warn);
//	(Load; on a             │              mysql_extra lines that undo what phxgo's my.cnf relies on
//	 validation error       ├─▶ ports      bind each listen address and close it; who holds a busy one
//	 read leniently so      ├─▶ dirs       dir, mysql_dir writable/creatable; mysql user reaches mysql_dir;
//	 the rest still run)    │              credentials_file and tls_key 0600 and owned by binlogd's user
//	                        ├─▶ clock      clocksource (tsc, kvm-clock), time sync (warn only)
//	                        ├─▶ disk       free space, filesystem type, write+fdatasync p50/p99
//	                        ├─▶ certs      load, validity, key pair, chain, identity = node id, SAN hosts
//	                        └─▶ credentials parse, no empty/default/short passwords
//
// Each check is a function of an Env (the config, the accounts, a root
// for /proc and /sys, the programs it runs, the limits) returning
// Results: `ok|warn|FAIL <check>: <finding>` and, for every warn and
// FAIL, `  fix: ...`. FAIL means binlogd will not start or will run
// unsafely; warn means it runs, but someone should look.
//
// What it never does: dial anything but loopback (host names resolve
// from /etc/hosts or a loopback resolver; ports are tested by binding),
// take a lock a starting binlogd could trip on (a running binlogd is
// found through /proc/locks, its wal's flock on dir/paxos/wal.lock, with
// Badger's pid file dir/paxos/LOCK as the fallback; its MariaDB through
// mysql_dir/mysqld.pid), or change anything but a temporary file for the
// fsync probe. A port held by this node's own running binlogd, MariaDB
// or sqlproxy is a warn; held by anything else, a FAIL naming the pid.
//
// The checks run as the user that will run binlogd: "owned by the
// running user" and "writable" are judged for it, and when it is root,
// mariadbd's rights for the OS user mysql (binlogd/mysqld drops to it).
package preflight
