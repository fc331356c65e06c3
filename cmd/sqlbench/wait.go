package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"phxgo/internal/cli"
)

// masterPos is the master's @@gtid_binlog_pos: every transaction it has
// committed to its binlog.
func masterPos(ctx context.Context, db *sql.DB) (gtidPos, error) {
	var s string
	if err := db.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&s); err != nil {
		return nil, fmt.Errorf("master @@gtid_binlog_pos: %w", err)
	}
	return parseGTIDPos(s)
}

// replicaPos is what a replica has applied: @@gtid_slave_pos merged with
// @@gtid_current_pos (a phxgo node that was master earlier holds its own
// transactions in its binlog, not in gtid_slave_pos).
func replicaPos(ctx context.Context, db *sql.DB) (gtidPos, error) {
	var a, b string
	if err := db.QueryRowContext(ctx, "SELECT @@gtid_slave_pos, @@gtid_current_pos").Scan(&a, &b); err != nil {
		return nil, err
	}
	pa, err := parseGTIDPos(a)
	if err != nil {
		return nil, err
	}
	pb, err := parseGTIDPos(b)
	if err != nil {
		return nil, err
	}
	return pa.merge(pb), nil
}

// waitApplied polls every replica (every 10 ms, so catch-up times are
// good to about that) until each has applied want, and returns when the
// last one did. Errors from a replica are retried until ctx ends (a phxgo
// replica may restart its MariaDB).
func waitApplied(ctx context.Context, want gtidPos, replicas map[string]*sql.DB) (time.Time, error) {
	var (
		mu   sync.Mutex
		last time.Time
		wg   sync.WaitGroup
		errs []error
	)
	for addr, db := range replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lastErr error
			var have gtidPos
			for {
				p, err := replicaPos(ctx, db)
				if err == nil && p.covers(want) {
					mu.Lock()
					if now := time.Now(); now.After(last) {
						last = now
					}
					mu.Unlock()
					return
				}
				if err != nil {
					lastErr = err
				} else {
					have = p
				}
				select {
				case <-ctx.Done():
					mu.Lock()
					errs = append(errs, fmt.Errorf("%w: replica %s at %v, want %v (last error: %v)", errNotApplied, addr, have, want, lastErr))
					mu.Unlock()
					return
				case <-time.After(10 * time.Millisecond):
				}
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return time.Time{}, errors.Join(errs...)
	}
	if last.IsZero() {
		last = time.Now()
	}
	return last, nil
}

// openAll opens a pool per address; close closes them all.
func openAll(addrs []string, user, pass string) (dbs map[string]*sql.DB, closeAll func(), err error) {
	dbs = map[string]*sql.DB{}
	closeAll = func() {
		for _, db := range dbs {
			db.Close()
		}
	}
	for _, a := range addrs {
		if _, ok := dbs[a]; ok {
			continue
		}
		db, err := openDB(a, user, pass)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		dbs[a] = db
	}
	return dbs, closeAll, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// cmdWaitApplied: bench.sh calls it before each run, so no run pays for
// the previous one's replication lag.
func cmdWaitApplied(args []string) error {
	fs := flag.NewFlagSet("waitapplied", flag.ContinueOnError)
	master := fs.String("master", "", "the master MariaDB (host:port)")
	replicas := fs.String("replicas", "", "the replicas, comma-separated")
	user := fs.String("user", "app", "MariaDB user")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up after")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	rs := splitList(*replicas)
	if *master == "" || len(rs) == 0 {
		return fmt.Errorf("%w: -master and -replicas are required", errBadFlags)
	}
	dbs, closeAll, err := openAll(append([]string{*master}, rs...), *user, os.Getenv("SQLBENCH_PASSWORD"))
	if err != nil {
		return err
	}
	defer closeAll()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	want, err := masterPos(ctx, dbs[*master])
	if err != nil {
		return err
	}
	reps := map[string]*sql.DB{}
	for _, r := range rs {
		reps[r] = dbs[r]
	}
	start := time.Now()
	t, err := waitApplied(ctx, want, reps)
	if err != nil {
		return err
	}
	fmt.Printf("applied %v on %d replicas after %.2f s\n", want, len(rs), t.Sub(start).Seconds())
	return nil
}

// cmdRejected prints the sum over nodes of binlogd's rejected-batch
// metric ("NaN" when binlogd exports none), for bench.sh to read before
// the first run and after the last.
func cmdRejected(args []string) error {
	fs := flag.NewFlagSet("rejected", flag.ContinueOnError)
	metrics := fs.String("metrics", "", "binlogd /metrics URLs, comma-separated")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	urls := splitList(*metrics)
	if len(urls) == 0 {
		return fmt.Errorf("%w: -metrics is required", errBadFlags)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sum := map[string]float64{}
	for _, u := range urls {
		m, err := fetchMetrics(ctx, u)
		if err != nil {
			return err
		}
		for k, v := range m {
			sum[k] += v
		}
	}
	if name := rejectedMetric(sum); name != "" {
		fmt.Printf("%.0f\n", sum[name])
	} else {
		fmt.Println("NaN")
	}
	return nil
}
