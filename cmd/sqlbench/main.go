// Command sqlbench is the helper of scripts/bench.sh (make bench-sql): it
// starts and stops the semi-sync baseline, measures one sysbench run the
// same way whichever system it targets, and prints the comparison.
//
//	sqlbench baseline-up   -dir DIR -base-port P [-relaxed-replicas] [-apply-threads N]   start master + 2 replicas, print the master's address
//	sqlbench baseline-down -dir DIR                                    stop them (SIGKILL: the data is thrown away)
//	sqlbench waitapplied   -master A -replicas B,C                     wait until every replica applied the master's GTID
//	sqlbench run           -label L -target A -master A -replicas B,C -out F [-pids KIND=PID,..] [-metrics URL,..] -- SYSBENCH_OPTS
//	sqlbench rejected      -metrics URL,..                             binlogd's rejected-batch metric, summed over nodes
//	sqlbench sustained     -results F [-label L -test T -threads N -step S]   a system's median sustained tps, rounded down
//	sqlbench report        -results F [-rejected-log F] [-rejected-metric-delta N]   print the tables and the last line
//
// The MariaDB password is read from $SQLBENCH_PASSWORD.
//
// A run (sqlbench run) reads its counters, runs sysbench with a latency
// histogram, reads the master's @@gtid_binlog_pos the moment sysbench
// ends, waits until every replica's @@gtid_slave_pos covers it, and reads
// its counters again. So every figure includes the replicas' catch-up:
//
//	burst tps      sysbench's transactions / its run time
//	sustained tps  transactions / (run time + catch-up)
//	latency        avg from sysbench; p95 and p99 from its histogram (one INSERT per transaction: a commit)
//	CPU            utime+stime of each process kind (/proc/PID/stat) over run + catch-up
//	flushes        Innodb_data_fsyncs + Syncs of every server, + binlogd's phxgo_wal_syncs_total
//
// The baseline uses the project's own launcher (binlogd/mysqld), so its
// my.cnf is exactly a phxgo node's: sync_binlog=1,
// innodb_flush_log_at_trx_commit=1, binlog_format=ROW, GTID strict mode,
// the same buffer pool and log sizes. Only the replication differs: the
// master runs rpl_semi_sync_master_enabled=ON with AFTER_SYNC and
// wait_no_slave=ON; its two replicas pull from it with
// rpl_semi_sync_slave_enabled=ON and semi-sync master OFF (a replica with
// semi-sync master on and log_slave_updates stalls its own SQL thread).
// An ACK means a replica received the transaction, not that it applied or
// fsynced it. The replicas are durable (sync_binlog=1,
// innodb_flush_log_at_trx_commit=1) unless -relaxed-replicas. They apply
// with 4 optimistic parallel workers, as a phxgo replica does by default
// (replica_apply_threads), unless -apply-threads says otherwise: with one
// SQL thread a durable replica falls tens of seconds behind a burst, and
// its master runs the burst on cores its replicas leave idle.
package main

import (
	"errors"
	"fmt"
	"os"

	"phxgo/binlogd/version"
	"phxgo/internal/cli"
)

var (
	errNoResults      = errors.New("report: no results")
	errBadSysbench    = errors.New("unreadable sysbench output")
	errSysbenchFailed = errors.New("sysbench failed")
	errBadGTID        = errors.New("bad GTID")
	errBadMetrics     = errors.New("bad metrics line")
	errBadProcStat    = errors.New("bad /proc stat")
	errNotApplied     = errors.New("replica did not apply the master's position in time")
)

const usage = "usage: sqlbench baseline-up|baseline-down|waitapplied|run|rejected|sustained|report [flags]  (sqlbench COMMAND -h for its flags)"

// Exit status (internal/cli): 0 done (or -h), 2 a bad command line, 1 a
// runtime error.
func main() {
	os.Exit(cli.Report(os.Stderr, "sqlbench", dispatch(os.Args[1:])))
}

// dispatch runs the command args name.
func dispatch(args []string) error {
	if len(args) == 0 {
		return cli.Usagef("no command\n%s", usage)
	}
	cmd, args := args[0], args[1:]
	switch cmd {
	case "-version", "--version", "version":
		version.Print(os.Stdout, "sqlbench")
		return nil
	case "baseline-up":
		return cmdBaselineUp(args)
	case "baseline-down":
		return cmdBaselineDown(args)
	case "waitapplied":
		return cmdWaitApplied(args)
	case "run":
		return cmdRun(args)
	case "rejected":
		return cmdRejected(args)
	case "report":
		return cmdReport(args)
	case "sustained":
		return cmdSustained(args)
	}
	if cli.IsHelp(cmd) {
		fmt.Fprintln(os.Stderr, usage)
		return nil
	}
	return cli.Usagef("unknown command %q\n%s", cmd, usage)
}
