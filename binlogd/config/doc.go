// Package config is binlogd's configuration file: JSON, every key
// documented on its field, validated at start with errors that name the
// key and the file. Secrets (MySQL passwords) live in a separate
// credentials file, never logged, that binlogd reads only when it grants
// nothing to group or others and is owned by the user binlogd runs as or
// root (secretfile.go).
//
// Addresses (addrs.go) come in two kinds. members[] is the cluster's
// shared view, the same in every node's file, and holds only what the
// OTHER nodes dial: grpc_addr, mysql_addr, proxy_addr, each unique
// cluster-wide. A node's own listeners are top-level keys that never
// leave it: grpc_listen and mysql_listen (default: its advertised
// addresses), and repl_addr, the replication endpoint only its own
// MariaDB pulls the binlog from (loopback, 127.0.0.1:17012 by default,
// the same on every host). Files from before the split, with repl_addr in
// every member, still load: Load takes this node's as repl_addr and
// reports a warning (Warnings) that binlogd logs once at start.
//
// A member with "witness": true (witness.go) runs binlogd only: it has no
// mysql_addr or proxy_addr, and its own file needs no mysql_dir or
// credentials_file and may not set supervise_mysql.
package config
