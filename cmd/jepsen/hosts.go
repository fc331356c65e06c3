package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"phxgo/jepsen/hosts"
)

// runHosts is `jepsen -hosts`: the separate-machines scenario
// (phxgo/jepsen/hosts) instead of a Jepsen workload. The last line is
// "hosts_test=pass|fail nodes=… failover_s=… added=… removed=… unsafe=…
// lost=…"; exit 0 pass, 1 fail, 2 cannot run here. The run's files (unit
// logs under log/) are kept when it fails.
func runHosts(binDir string, keep bool) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	bin, err := filepath.Abs(binDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "jepsen -hosts:", err)
		return 2
	}
	repo, _ := os.Getwd()
	work, err := os.MkdirTemp("", "phxgo-hosts-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "jepsen -hosts:", err)
		return 2
	}
	logf := func(format string, args ...any) { slog.Info(fmt.Sprintf(format, args...)) }
	res, err := hosts.Run(ctx, hosts.Options{BinDir: bin, RepoDir: repo, WorkDir: work, Logf: logf})
	if err != nil {
		fmt.Fprintln(os.Stderr, "jepsen -hosts:", err)
	}
	fmt.Fprintf(os.Stderr, "took %.0fs; %d rows acknowledged; added host seeded by %s\n", res.Took.Seconds(), res.Acked, res.Seed)
	if res.Pass && !keep {
		os.RemoveAll(work)
	} else {
		fmt.Fprintf(os.Stderr, "the run's files (unit logs in log/): %s\n", work)
	}
	fmt.Println(res.Line())
	switch {
	case res.Pass:
		return 0
	case err != nil && res.Nodes == 0:
		return 2
	}
	return 1
}
