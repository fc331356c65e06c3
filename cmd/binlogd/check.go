package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"phxgo/binlogd/preflight"
)

// cmdCheck is the preflight: it checks a node's host against its config
// before the first start (binlogd/preflight). Exit 0 when nothing failed,
// 1 when something did, 2 on a usage error.
func cmdCheck(args []string) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "the node's config file (required)")
	asJSON := fs.Bool("json", false, "print JSON for scripts")
	lim := preflight.DefaultLimits()
	warnGiB := fs.Float64("warn-free-gib", float64(lim.WarnFreeBytes)/(1<<30), "warn when a data filesystem has less free space (GiB)")
	failGiB := fs.Float64("fail-free-gib", float64(lim.FailFreeBytes)/(1<<30), "fail when a data filesystem has less free space (GiB)")
	samples := fs.Int("fsync-samples", lim.FsyncSamples, "write+fdatasync rounds per data directory")
	fsyncWarn := fs.Duration("fsync-warn-p99", lim.FsyncWarnP99, "warn when a data directory's fdatasync p99 exceeds this")
	certWarn := fs.Duration("cert-warn", lim.CertWarn, "warn when a certificate expires within this")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if *cfgPath == "" || fs.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: binlogd check -config FILE [-json] [-warn-free-gib N] [-fail-free-gib N] [-fsync-samples N] [-fsync-warn-p99 D] [-cert-warn D]")
		return 2
	}
	if *failGiB < 0 || *warnGiB < *failGiB || *samples < 1 || *samples > 10000 {
		fmt.Fprintln(os.Stderr, "binlogd check: need 0 <= -fail-free-gib <= -warn-free-gib and 1 <= -fsync-samples <= 10000")
		return 2
	}
	env := preflight.NewEnv(*cfgPath)
	env.Limits = preflight.Limits{
		WarnFreeBytes: uint64(*warnGiB * (1 << 30)),
		FailFreeBytes: uint64(*failGiB * (1 << 30)),
		FsyncSamples:  *samples,
		FsyncWarnP99:  *fsyncWarn,
		CertWarn:      *certWarn,
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	rs := preflight.Run(ctx, env)
	write := preflight.WriteText
	if *asJSON {
		write = preflight.WriteJSON
	}
	if err := write(os.Stdout, rs); err != nil {
		fmt.Fprintln(os.Stderr, "binlogd check:", err)
		return 1
	}
	return preflight.ExitCode(rs)
}
