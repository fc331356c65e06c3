// Command jepsen runs one Jepsen-style test of a phxgo cluster in a
// private network namespace; see package phxgo/jepsen.
//
//	go run ./cmd/jepsen -workload register -nemesis all -time 60s
//	go run ./cmd/jepsen -hosts    (separate machines: make hosts-test)
//	go run ./cmd/jepsen failover -threads 64 -rounds 3   (make failover-bench)
//	jepsen lazyfs-serve -mount M -backing B -control SOCK (started by -nemesis power, one per node)
//
// The last line is "valid=<true|false|unknown> ops=… ok=… fail=… info=…
// workload=… nemesis=…"; the exit code is 0 only for valid=true
// (1 false, 2 unknown or setup error).
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
	"strings"
	"syscall"

	"github.com/go-sql-driver/mysql"

	"phxgo/binlogd/version"
	"phxgo/internal/cli"
	"phxgo/jepsen"
	"phxgo/jepsen/nemesis"
	"phxgo/jepsen/phxcluster"
	"phxgo/jepsen/report"
)

// launcher starts a real phxgo cluster (binlogd + mariadbd + sqlproxy per
// node) from the -bin binaries inside the run's namespace.
var launcher jepsen.Launcher = phxcluster.Launcher(phxcluster.Options{})

func main() {
	// The harness must not die because its output's reader went away
	// (jepsen ... | head): SIGPIPE on a write to a closed stdout/stderr
	// would kill it before its cleanup, leaving the cluster's processes,
	// data and network namespace behind. Ignored, the write fails with
	// EPIPE and the run finishes and cleans up. Not signal.Notify: that
	// would also catch sockets' SIGPIPE. (Children it starts inherit the
	// ignored SIGPIPE: a write of theirs to a closed pipe fails with EPIPE
	// instead; binlogd and sqlproxy ignore it themselves.)
	signal.Ignore(syscall.SIGPIPE)
	if len(os.Args) > 1 && os.Args[1] == "failover" {
		os.Exit(failoverMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "lazyfs-serve" {
		os.Exit(lazyfsServeMain(os.Args[2:]))
	}
	cfg := jepsen.DefaultConfig()
	flag.StringVar(&cfg.Workload, "workload", cfg.Workload, "register, bank, set, append or big")
	flag.StringVar(&cfg.Nemesis, "nemesis", cfg.Nemesis, "comma list of "+strings.Join(nemesis.Kinds, ", ")+", "+nemesis.Power+" (not in all: puts the nodes on lazyfs); all; none")
	flag.DurationVar(&cfg.Time, "time", cfg.Time, "how long the workload runs under faults")
	flag.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "client processes")
	flag.Float64Var(&cfg.Rate, "rate", cfg.Rate, "target ops/s over all clients (0: unlimited)")
	flag.IntVar(&cfg.Nodes, "nodes", cfg.Nodes, "cluster nodes, witnesses and learners included")
	flag.IntVar(&cfg.Witnesses, "witnesses", 0, "how many of the nodes are witnesses (binlogd only: vote, no MariaDB or proxy, no clients; faults hit them too), after the voters")
	flag.IntVar(&cfg.Learners, "learners", 0, "how many of the nodes are learners (follow the log, serve reads, never vote; clients use their proxies), after the witnesses")
	flag.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the operation and fault schedule")
	flag.StringVar(&cfg.OutDir, "out", "", "results directory (default jepsen-results/<workload>-<nemesis>-<time>)")
	flag.DurationVar(&cfg.Lease, "lease", cfg.Lease, "master lease duration given to the cluster")
	flag.StringVar(&cfg.BinDir, "bin", cfg.BinDir, "directory of the project's binaries (make build)")
	flag.DurationVar(&cfg.OpTimeout, "op-timeout", cfg.OpTimeout, "timeout of one client operation")
	flag.IntVar(&cfg.Workloads.Keys, "keys", cfg.Workloads.Keys, "register: concurrent keys; append: keys")
	flag.IntVar(&cfg.Workloads.Accounts, "accounts", cfg.Workloads.Accounts, "bank: accounts")
	flag.Int64Var(&cfg.Workloads.BigTxnBytes, "big-txn-bytes", cfg.Workloads.BigTxnBytes, "big: bytes of one huge transaction (1 MiB rows)")
	flag.Int64Var(&cfg.Workloads.BigLoadBytes, "big-load-bytes", cfg.Workloads.BigLoadBytes, "big: bytes of one bulk load (1 KiB rows, one statement)")
	flag.BoolVar(&cfg.KeepData, "keep", false, "keep the cluster's data directory after a run that is not valid")
	flag.BoolVar(&cfg.RWSplit, "rwsplit", false, "append: clients use the proxies' read/write-split port (read-only ops become one SELECT a replica may serve; checked for what that port promises)")
	flag.DurationVar(&cfg.LatencyBound, "latency-bound", 0, "if > 0: no op may wait longer than this with no fault in place (below -op-timeout; e.g. -nemesis logd -op-timeout 60s -latency-bound 10s)")
	quiet := flag.Duration("quiet", 0, "time with no fault before each fault (0: the default, 2x -lease and at least 5s); longer than one operation lets it finish between faults (big: -quiet 7m for a 2 GiB load)")
	onLazyFS := flag.Bool("lazyfs", false, "put each node's directory on jepsen/lazyfs (needs root and /dev/fuse; implied by -nemesis power)")
	showVersion := flag.Bool("version", false, "print the build and exit")
	runHostsTest := flag.Bool("hosts", false, "run the separate-machines scenario (jepsen/hosts, make hosts-test) instead of a workload; run from the checkout")
	flag.Parse()
	if flag.NArg() > 0 { // a typo'd command must not run the default workload
		fmt.Fprintf(os.Stderr, "jepsen: unexpected arguments %q (commands: failover, lazyfs-serve; -h for the flags)\n", flag.Args())
		os.Exit(cli.ExitUsage)
	}
	if *showVersion {
		version.Print(os.Stdout, "jepsen")
		return
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, nil)))
	// go-sql-driver logs every dropped connection; the history has them.
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
	if *quiet < 0 {
		fmt.Fprintf(os.Stderr, "jepsen: -quiet must be >= 0, got %s\n", *quiet)
		os.Exit(2)
	}
	if *quiet > 0 {
		// Only the quiet period changes; the holds stay scaled by the lease.
		s := nemesis.DefaultSchedule(nil, cfg.Lease)
		s.Quiet = *quiet
		cfg.Schedule = &s
	}
	if kinds, _ := nemesis.ParseKinds(cfg.Nemesis); *onLazyFS || slices.Contains(kinds, nemesis.Power) {
		launcher = phxcluster.Launcher(phxcluster.Options{LazyFS: true})
	}
	if *runHostsTest {
		os.Exit(runHosts(cfg.BinDir, cfg.KeepData))
	}
	os.Exit(run(cfg))
}

func run(cfg jepsen.Config) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C kills at once
	}()
	if launcher == nil {
		fmt.Fprintln(os.Stderr, "jepsen:", jepsen.ErrNoLauncher, "(cmd/jepsen has no cluster launcher wired in yet; see jepsen/cluster)")
		fmt.Printf("valid=unknown ops=0 ok=0 fail=0 info=0 workload=%s nemesis=%s\n", cfg.Workload, cfg.Nemesis)
		return 2
	}
	res, err := jepsen.Run(ctx, cfg, launcher)
	if err != nil {
		fmt.Fprintln(os.Stderr, "jepsen:", err)
	}
	if res == nil {
		fmt.Printf("valid=unknown ops=0 ok=0 fail=0 info=0 workload=%s nemesis=%s\n", cfg.Workload, cfg.Nemesis)
		return 2
	}
	fmt.Fprint(os.Stderr, res.Summary())
	fmt.Fprintln(os.Stderr, res.Stats())
	fmt.Fprintf(os.Stderr, "results in %s (pictures and verdicts: %s)\n", res.OutDir, filepath.Join(res.OutDir, report.IndexHTML))
	fmt.Println(res.Line())
	switch res.Valid {
	case "true":
		return 0
	case "false":
		return 1
	}
	return 2
}
