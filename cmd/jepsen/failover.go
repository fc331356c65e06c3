package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"phxgo/binlogd/localcluster"
	"phxgo/internal/cli"
	"phxgo/jepsen/failover"
)

// failoverMain is `jepsen failover`: rounds of a master kill under an
// insert load on a local 3-node cluster, each timed in parts (package
// jepsen/failover). The last line is "failover rounds=… within_two_leases=…
// median_total_ms=… lease_ms=…"; the exit code is 0 when every round was
// measured and its median total is within two leases.
func failoverMain(args []string) int {
	fs := flag.NewFlagSet("jepsen failover", flag.ContinueOnError)
	o := failover.DefaultOptions()
	fs.IntVar(&o.Threads, "threads", o.Threads, "insert clients through the proxies")
	fs.DurationVar(&o.Poll, "poll", o.Poll, "Status polling interval")
	rounds := fs.Int("rounds", 3, "failovers, each killing the current master (the old one is restarted between rounds)")
	lease := fs.Duration("lease", 3*time.Second, "master lease duration given to the cluster")
	bin := fs.String("bin", "bin", "directory of binlogd and sqlproxy (make build)")
	dir := fs.String("dir", "", "cluster directory (default: a temporary one, removed afterwards)")
	if err := cli.Parse(fs, args); err != nil {
		return cli.Report(os.Stderr, "jepsen", err)
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, nil)))
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	parts, err := failoverRounds(ctx, *bin, *dir, *lease, *rounds, o)
	var totals []time.Duration
	within := 0
	for _, p := range parts {
		totals = append(totals, p.Total())
		if p.WithinTwoLeases() {
			within++
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "jepsen failover:", err)
	}
	var median time.Duration
	if len(totals) > 0 {
		slices.Sort(totals)
		median = totals[len(totals)/2]
	}
	fmt.Printf("failover rounds=%d within_two_leases=%d median_total_ms=%d lease_ms=%d threads=%d\n",
		len(parts), within, median.Milliseconds(), lease.Milliseconds(), o.Threads)
	if err != nil || len(parts) == 0 || median > 2**lease {
		return 1
	}
	return 0
}

func failoverRounds(ctx context.Context, bin, dir string, lease time.Duration, rounds int, o failover.Options) ([]failover.Parts, error) {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return nil, err
	}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "phxgo-failover-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
	}
	spec := localcluster.Spec{Dir: dir, Nodes: 3, BasePort: localcluster.FreeBasePort(3), BinDir: bin, LeaseDuration: lease, Proxy: true}
	c, err := localcluster.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	defer c.Stop()
	progress := func(s string) { slog.Info("failover: waiting for a healthy cluster", "missing", s) }
	var parts []failover.Parts
	for r := 1; r <= rounds; r++ {
		hctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
		master, err := c.WaitHealthy(hctx, progress)
		cancel()
		if err != nil {
			return parts, fmt.Errorf("round %d: %w", r, err)
		}
		if r == 1 {
			if err := failover.Setup(ctx, c, master); err != nil {
				return parts, err
			}
		}
		p, err := failover.Measure(ctx, c, master, o)
		fmt.Fprintf(os.Stderr, "round %d: %s", r, p)
		if err != nil {
			return parts, fmt.Errorf("round %d: %w", r, err)
		}
		parts = append(parts, p)
		if err := c.StartNode(master); err != nil {
			return parts, err
		}
	}
	return parts, nil
}
