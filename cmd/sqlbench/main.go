// Command sqlbench is the helper of scripts/bench.sh (make bench-sql): it
// starts and stops the baseline of issue 8, three plain MariaDB servers in
// semi-sync replication, and prints the comparison table from sysbench
// results.
//
//	sqlbench baseline-up   -dir DIR -base-port P   start master + 2 semi-sync replicas, print the master's address
//	sqlbench baseline-down -dir DIR                stop them (SIGTERM, then SIGKILL)
//	sqlbench report        -results FILE           print the table and the ratio line
//
// The baseline uses the project's own launcher (binlogd/mysqld), so its
// my.cnf is exactly a phxgo node's: sync_binlog=1,
// innodb_flush_log_at_trx_commit=1, binlog_format=ROW, GTID strict mode,
// the same buffer pool and log sizes. Only the replication differs: the
// master runs rpl_semi_sync_master_enabled=ON with AFTER_SYNC and
// wait_no_slave=ON, and its two replicas pull from it with
// rpl_semi_sync_slave_enabled=ON (an ACK means a replica received the
// transaction, not that it fsynced it).
package main

import (
	"fmt"
	"os"

	"phxgo/binlogd/version"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: sqlbench baseline-up|baseline-down|report [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "-version", "--version", "version":
		version.Print(os.Stdout, "sqlbench")
		return
	case "baseline-up":
		err = cmdBaselineUp(os.Args[2:])
	case "baseline-down":
		err = cmdBaselineDown(os.Args[2:])
	case "report":
		err = cmdReport(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sqlbench:", err)
		os.Exit(1)
	}
}
