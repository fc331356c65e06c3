// Package binlogd is the root of phxgo's node daemon. The daemon itself is
// package node; the pieces it wires together live beside it:
//
//	node/        the daemon: supervise MariaDB, elect, capture, serve, recover
//	capture/     master side: semi-sync replica of the local MariaDB; ACK only when durable
//	replserver/  replica side: MySQL replication-master endpoint serving the log
//	recovery/    cut a crashed MariaDB's binlog back to the log before it starts
//	role/        switch MariaDB between read-only replica and writable master
//	mysqld/      create, start, adopt and stop local mariadbd processes
//	binlog/      GTIDs and transactions as raw binlog events
//	config/      binlogd's config and credentials files
//	localcluster/ a whole cluster of real processes on one machine
//	e2e/         end-to-end tests on real clusters
//
// cmd/binlogd is its command line (run, status, recover, switchover,
// stop-mysql, log).
package binlogd
