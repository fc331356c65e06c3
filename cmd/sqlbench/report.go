package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
)

// The systems bench.sh measures, in table order.
const (
	sysBaseline = "baseline"    // semi-sync master, directly
	sysProxy    = "phxgo-proxy" // phxgo through a node's sqlproxy
	sysDirect   = "phxgo-direct"
)

var errNoResults = errors.New("report: no results")

// run is one sysbench run: a line of the results file
// "system test threads tps qps avg_ms p95_ms errors_per_s".
type run struct {
	system, test          string
	threads               int
	tps, qps, avg, p95, e float64
}

type key struct {
	system, test string
	threads      int
}

func parseResults(path string) ([]run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []run
	sc := bufio.NewScanner(f)
	for ln := 1; sc.Scan(); ln++ {
		fl := strings.Fields(sc.Text())
		if len(fl) == 0 || strings.HasPrefix(fl[0], "#") {
			continue
		}
		if len(fl) != 8 {
			return nil, fmt.Errorf("%s:%d: want 8 fields, got %d", path, ln, len(fl))
		}
		r := run{system: fl[0], test: fl[1]}
		if r.threads, err = strconv.Atoi(fl[2]); err != nil {
			return nil, fmt.Errorf("%s:%d: threads: %w", path, ln, err)
		}
		for k, p := range []*float64{&r.tps, &r.qps, &r.avg, &r.p95, &r.e} {
			if *p, err = strconv.ParseFloat(fl[3+k], 64); err != nil {
				return nil, fmt.Errorf("%s:%d: field %d: %w", path, ln, 4+k, err)
			}
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

// median of each figure over the rounds of one key.
func median(rs []run) run {
	m := rs[0]
	pick := func(get func(run) float64) float64 {
		v := make([]float64, len(rs))
		for k, r := range rs {
			v[k] = get(r)
		}
		sort.Float64s(v)
		if len(v)%2 == 1 {
			return v[len(v)/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	m.tps = pick(func(r run) float64 { return r.tps })
	m.qps = pick(func(r run) float64 { return r.qps })
	m.avg = pick(func(r run) float64 { return r.avg })
	m.p95 = pick(func(r run) float64 { return r.p95 })
	m.e = pick(func(r run) float64 { return r.e })
	return m
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

func cmdReport(args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	path := fs.String("results", "", "results file written by bench.sh")
	if err := fs.Parse(args); err != nil {
		return err
	}
	runs, err := parseResults(*path)
	if err != nil {
		return err
	}
	if len(runs) == 0 {
		return errNoResults
	}
	groups := map[key][]run{}
	var tests []string
	var threads []int
	seenT, seenN := map[string]bool{}, map[int]bool{}
	for _, r := range runs {
		k := key{r.system, r.test, r.threads}
		groups[k] = append(groups[k], r)
		if !seenT[r.test] {
			seenT[r.test], tests = true, append(tests, r.test)
		}
		if !seenN[r.threads] {
			seenN[r.threads], threads = true, append(threads, r.threads)
		}
	}
	sort.Ints(threads)
	get := func(sys, test string, n int) (run, bool) {
		g := groups[key{sys, test, n}]
		if len(g) == 0 {
			return run{}, false
		}
		return median(g), true
	}

	fmt.Printf("%-18s %4s %-13s %10s %10s %9s %9s %7s %8s %8s\n",
		"test", "thr", "system", "qps", "tps", "avg_ms", "p95_ms", "err/s", "qps/base", "p95/base")
	for _, t := range tests {
		for _, n := range threads {
			b, okb := get(sysBaseline, t, n)
			for _, sys := range []string{sysBaseline, sysProxy, sysDirect} {
				r, ok := get(sys, t, n)
				if !ok {
					continue
				}
				q, p := "-", "-"
				if okb {
					q = fmt.Sprintf("%.3f", ratio(r.qps, b.qps))
					p = fmt.Sprintf("%.3f", ratio(r.p95, b.p95))
				}
				fmt.Printf("%-18s %4d %-13s %10.0f %10.1f %9.2f %9.2f %7.1f %8s %8s\n",
					t, n, sys, r.qps, r.tps, r.avg, r.p95, r.e, q, p)
			}
			if px, ok1 := get(sysProxy, t, n); ok1 {
				if d, ok2 := get(sysDirect, t, n); ok2 {
					fmt.Printf("%-18s %4d %-13s proxy cost: qps proxy/direct %.3f, avg +%.2f ms\n", t, n, "", ratio(px.qps, d.qps), px.avg-d.avg)
				}
			}
		}
	}
	// The summary line: phxgo through its proxy over the baseline, at the
	// highest thread count measured (the targets are at 64).
	top := threads[len(threads)-1]
	line := func(name, test string) string {
		px, ok1 := get(sysProxy, test, top)
		b, ok2 := get(sysBaseline, test, top)
		if !ok1 || !ok2 {
			return name + "=NaN"
		}
		return fmt.Sprintf("%s=%.3f", name, ratio(px.qps, b.qps))
	}
	fmt.Printf("\n(ratios: phxgo through its proxy / semi-sync baseline, QPS, at %d threads)\n", top)
	fmt.Println(line("insert_ratio", "oltp_insert"), line("rw_ratio", "oltp_read_write"), line("point_select_ratio", "oltp_point_select"))
	return nil
}
