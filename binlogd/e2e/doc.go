// Package e2e holds binlogd's end-to-end tests: real 3-node clusters of
// binlogd, MariaDB and sqlproxy processes started by localcluster, driven
// by real clients. They are the verification of the write path, the
// replication endpoint, failover and recovery.
package e2e
