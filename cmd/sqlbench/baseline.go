package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"phxgo/binlogd/config"
	"phxgo/binlogd/mysqld"
	"phxgo/internal/cli"
)

// baselineNodes is the baseline's size: one master, two semi-sync replicas.
const baselineNodes = 3

var (
	errNoSemiSync = errors.New("baseline: semi-sync did not come up")
	errBadFlags   = &cli.UsageError{Err: errors.New("bad flags")} // exit 2
)

// Baseline accounts: repl may register as a replica; app is what sysbench
// uses (same privileges as a phxgo app account, no SUPER).
var baselineAccounts = mysqld.Accounts{
	CaptureUser: "repl", CapturePassword: "repl",
	AppUser: "app", AppPassword: "app",
}

// instances are the baseline's servers. applyThreads is each one's
// slave_parallel_threads, set on every server as a phxgo node sets
// replica_apply_threads on every node (it only acts on a replica).
func instances(dir string, base, applyThreads int) ([]*mysqld.Instance, error) {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var out []*mysqld.Instance
	for id := 1; id <= baselineNodes; id++ {
		in, err := mysqld.New(mysqld.Options{
			Dir:          filepath.Join(dir, "node"+strconv.Itoa(id)),
			Port:         base + id,
			ServerID:     uint32(id),
			ApplyThreads: applyThreads,
			Logger:       logger,
		})
		if err != nil {
			return nil, err
		}
		out = append(out, in)
	}
	return out, nil
}

func cmdBaselineUp(args []string) error {
	fs := flag.NewFlagSet("baseline-up", flag.ContinueOnError)
	dir := fs.String("dir", "", "baseline directory (created)")
	base := fs.Int("base-port", 0, "node N listens on base-port+N")
	appPass := fs.String("app-password", baselineAccounts.AppPassword, "the app account's password (bench.sh passes phxgo's, so both systems log in alike)")
	wait := fs.Duration("wait", 3*time.Minute, "how long to wait for semi-sync to come up")
	relaxed := fs.Bool("relaxed-replicas", false, "replicas run sync_binlog=0 and innodb_flush_log_at_trx_commit=2 (default: durable, as the master)")
	applyThreads := fs.Int("apply-threads", config.DefaultReplicaApplyThreads, "replicas apply with this many parallel workers (slave_parallel_threads, optimistic), as a phxgo replica does by default; 0: one SQL thread")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if *dir == "" || *base <= 0 {
		return fmt.Errorf("%w: -dir and -base-port are required", errBadFlags)
	}
	accounts := baselineAccounts
	accounts.AppPassword = *appPass
	ctx, cancel := context.WithTimeout(context.Background(), *wait)
	defer cancel()
	if *applyThreads < 0 || *applyThreads > 256 {
		return fmt.Errorf("%w: -apply-threads %d: want 0..256", errBadFlags, *applyThreads)
	}
	ins, err := instances(*dir, *base, *applyThreads)
	if err != nil {
		return err
	}
	dbs := make([]*sql.DB, len(ins))
	for k, in := range ins {
		if err := in.Init(ctx); err != nil {
			return err
		}
		if err := in.Start(ctx); err != nil {
			return err
		}
		db, err := in.DB("")
		if err != nil {
			return err
		}
		defer db.Close()
		if err := mysqld.Bootstrap(ctx, db, accounts); err != nil {
			return err
		}
		dbs[k] = db
	}
	// The master enables semi-sync before any replica connects: a MariaDB
	// replica whose master has it off at connect time stays asynchronous.
	master := dbs[0]
	if err := execAll(ctx, master,
		"SET GLOBAL read_only=OFF",
		"SET GLOBAL rpl_semi_sync_master_wait_point=AFTER_SYNC",
		"SET GLOBAL rpl_semi_sync_master_wait_no_slave=ON",
		"SET GLOBAL rpl_semi_sync_master_enabled=ON",
	); err != nil {
		return err
	}
	// Replicas: semi-sync slave only. A replica with semi-sync master on
	// and log_slave_updates would wait for ACKs of its own applied
	// transactions that nobody sends, and its SQL thread stalls.
	replicaDurability := []string{"SET GLOBAL sync_binlog=1", "SET GLOBAL innodb_flush_log_at_trx_commit=1"}
	if *relaxed {
		replicaDurability = []string{"SET GLOBAL sync_binlog=0", "SET GLOBAL innodb_flush_log_at_trx_commit=2"}
	}
	for _, db := range dbs[1:] {
		if err := execAll(ctx, db, append(replicaDurability,
			"STOP SLAVE",
			"SET GLOBAL rpl_semi_sync_master_enabled=OFF",
			"SET GLOBAL rpl_semi_sync_slave_enabled=ON",
			fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='%s', MASTER_PASSWORD='%s', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1",
				ins[0].Port(), baselineAccounts.CaptureUser, baselineAccounts.CapturePassword),
			"START SLAVE",
		)...); err != nil {
			return err
		}
	}
	if err := awaitSemiSync(ctx, master, baselineNodes-1); err != nil {
		return err
	}
	// A write through semi-sync proves the ACK path before the benchmark.
	if err := execAll(ctx, master, "CREATE DATABASE IF NOT EXISTS sbtest"); err != nil {
		return err
	}
	fmt.Println(ins[0].Addr())
	return nil
}

func execAll(ctx context.Context, db *sql.DB, stmts ...string) error {
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// awaitSemiSync waits until the master reports semi-sync ON with n
// semi-sync clients.
func awaitSemiSync(ctx context.Context, db *sql.DB, n int) error {
	var last string
	for {
		st := map[string]string{}
		rows, err := db.QueryContext(ctx, "SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_master_%'")
		if err == nil {
			for rows.Next() {
				var k, v string
				if rows.Scan(&k, &v) == nil {
					st[k] = v
				}
			}
			rows.Close()
		}
		c, _ := strconv.Atoi(st["Rpl_semi_sync_master_clients"])
		if st["Rpl_semi_sync_master_status"] == "ON" && c >= n {
			return nil
		}
		last = fmt.Sprintf("status=%q clients=%q err=%v", st["Rpl_semi_sync_master_status"], st["Rpl_semi_sync_master_clients"], err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %s", errNoSemiSync, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func cmdBaselineDown(args []string) error {
	fs := flag.NewFlagSet("baseline-down", flag.ContinueOnError)
	dir := fs.String("dir", "", "baseline directory")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if *dir == "" {
		return fmt.Errorf("%w: -dir is required", errBadFlags)
	}
	ins, err := instances(*dir, 1, 0) // ports are not needed to stop
	if err != nil {
		return err
	}
	var errs []error
	for _, in := range ins {
		// A baseline server is nobody's child here and left no handoff
		// record: it is an orphan to mysqld, ended with SIGKILL (its
		// data is thrown away with the bench's work directory).
		if _, err := in.KillOrphan(60 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
