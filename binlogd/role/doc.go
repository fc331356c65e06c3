// Package role switches a node's MariaDB between the two shapes phxgo
// allows, and reads back what it has applied.
//
//	replica: read_only=ON, replicating from its own binlogd's endpoint
//	         (CHANGE MASTER TO binlogd, MASTER_USE_GTID=current_pos).
//	master:  replication stopped, semi-sync master ON, read_only=OFF.
//
// read_only does not stop accounts holding SUPER or READ ONLY ADMIN, so
// client-facing accounts never hold them (see mysqld.Accounts).
package role
