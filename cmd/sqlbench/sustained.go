package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"

	"phxgo/internal/cli"
)

// cmdSustained prints the median sustained tps of one system's runs in a
// results file, rounded down to a multiple of -step. bench.sh offers
// that rate (BENCH_RATE's "semi") to both systems: latency compared at
// the load the semi-sync baseline keeps its replicas current with, not
// at its burst, which its replicas cannot follow.
func cmdSustained(args []string) error {
	fs := flag.NewFlagSet("sustained", flag.ContinueOnError)
	path := fs.String("results", "", "results file written by sqlbench run")
	label := fs.String("label", "semisync-direct", "the system and path whose runs count")
	test := fs.String("test", testInsert, "sysbench test")
	threads := fs.Int("threads", 16, "thread count of the runs")
	step := fs.Int("step", 50, "round the rate down to a multiple of this (at least one step)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if *path == "" || *step <= 0 {
		return fmt.Errorf("%w: -results is required and -step must be positive", errBadFlags)
	}
	f, err := os.Open(*path)
	if err != nil {
		return err
	}
	defer f.Close()
	rate, err := sustainedRate(f, *label, *test, *threads, *step)
	if err != nil {
		return err
	}
	fmt.Println(rate)
	return nil
}

// sustainedRate is the median sustained tps of label's runs of test at
// threads, rounded down to a multiple of step, and at least step.
func sustainedRate(r io.Reader, label, test string, threads, step int) (int, error) {
	recs, err := readRecords(r)
	if err != nil {
		return 0, err
	}
	rec, ok := index(recs).get(label, test, threads)
	if !ok {
		return 0, fmt.Errorf("%w: no %s run of %s at %d threads", errNoResults, label, test, threads)
	}
	tps := rec.sustainedTPS()
	if math.IsNaN(tps) || math.IsInf(tps, 0) || tps <= 0 {
		return 0, fmt.Errorf("%w: %s's sustained rate is %v", errNoResults, label, tps)
	}
	return max(int(tps)/step*step, step), nil
}
