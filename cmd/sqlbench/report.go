package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	"phxgo/internal/cli"
)

// The labels bench.sh gives its runs: system and the path the client takes.
const (
	semiDirect  = "semisync-direct"    // the semi-sync master, directly
	semiHAProxy = "semisync-haproxy"   // through HAProxy (tcp mode) in front of it
	phxMaster   = "phxgo-proxy-master" // through the master node's sqlproxy
	phxOther    = "phxgo-proxy-other"  // through another node's sqlproxy (to the master's MariaDB by TCP)
	phxDirect   = "phxgo-direct"       // the phxgo master's MariaDB, directly (reference)
	phxHAProxy  = "phxgo-haproxy"      // through HAProxy in front of the phxgo master's MariaDB (its unix socket)
	// through HAProxy reaching the phxgo master's MariaDB by TCP, as one
	// on another host would: the anchor for another node's proxy
	phxHAProxyTCP = "phxgo-haproxy-tcp"
	// the same with the client's TLS passed through to MariaDB, as a
	// secured HAProxy deployment must (HAProxy cannot start MySQL's TLS
	// itself): the same crypto on that MariaDB as another node's proxy's
	// TLS link to it
	phxHAProxyTCPTLS = "phxgo-haproxy-tcp-tls"
)

var labelOrder = []string{semiDirect, semiHAProxy, phxHAProxy, phxMaster, phxHAProxyTCP, phxHAProxyTCPTLS, phxOther, phxDirect}

// anchorLabel is the HAProxy run whose point selects label's compare with
// within phxgo: the master node's proxy reaches its MariaDB by the unix
// socket, like phxgo-haproxy; another node's proxy reaches the master's
// MariaDB by TCP (on separate hosts it could not do otherwise), like
// phxgo-haproxy-tcp, when that was measured, and with TLS as it does
// (phxgo-haproxy-tcp-tls) when that was. HAProxy runs compare with the
// socket one.
func anchorLabel(r results, label string, thr int) string {
	if label == phxOther {
		for _, a := range []string{phxHAProxyTCPTLS, phxHAProxyTCP} {
			if _, ok := r.get(a, testPoint, thr); ok {
				return a
			}
		}
	}
	return phxHAProxy
}

// haproxyFor is the HAProxy run a label's point selects compare with: the
// one in front of the same system's master (phxgo's proxies reach a
// different MariaDB than the baseline's), the baseline's when phxgo's was
// not measured.
func haproxyFor(r results, label string, thr int) (record, bool) {
	if strings.HasPrefix(label, "phxgo-") {
		if h, ok := r.get(anchorLabel(r, label, thr), testPoint, thr); ok {
			return h, true
		}
	}
	return r.get(semiHAProxy, testPoint, thr)
}

// The process kinds bench.sh counts CPU for, in table order.
var cpuKinds = []string{"mariadbd", "binlogd", "sqlproxy", "haproxy"}

const (
	testInsert = "oltp_insert"
	testPoint  = "oltp_point_select"
)

// rateTest names a run at a fixed offered load (sqlbench run -rate):
// oltp_insert@300 is oltp_insert at 300 transactions per second.
func rateTest(test string, rate int) string {
	if rate <= 0 {
		return test
	}
	return fmt.Sprintf("%s@%d", test, rate)
}

// fixedRates lists the offered loads of test's fixed-rate runs.
func (r results) fixedRates(test string) []string {
	seen := map[string]bool{}
	var out []string
	for k := range r {
		if strings.HasPrefix(k.test, test+"@") && !seen[k.test] {
			seen[k.test] = true
			out = append(out, k.test)
		}
	}
	// By rate, so oltp_insert@300 comes before oltp_insert@1200.
	rate := func(t string) int {
		n, _ := strconv.Atoi(strings.TrimPrefix(t, test+"@"))
		return n
	}
	sort.Slice(out, func(i, j int) bool { return rate(out[i]) < rate(out[j]) })
	return out
}

func readRecords(r io.Reader) ([]record, error) {
	var out []record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for ln := 1; sc.Scan(); ln++ {
		t := strings.TrimSpace(sc.Text())
		if t == "" {
			continue
		}
		var rec record
		if err := json.Unmarshal([]byte(t), &rec); err != nil {
			return nil, fmt.Errorf("results line %d: %w", ln, err)
		}
		out = append(out, rec)
	}
	return out, sc.Err()
}

type rkey struct {
	label, test string
	threads     int
}

// results indexes runs; with several rounds of one key, get returns the
// run with the median key figure (sustained tps for writes, qps for reads).
type results map[rkey][]record

func index(recs []record) results {
	r := results{}
	for _, rec := range recs {
		k := rkey{rec.Label, rec.Test, rec.Threads}
		r[k] = append(r[k], rec)
	}
	return r
}

func (r results) get(label, test string, threads int) (record, bool) {
	g := append([]record(nil), r[rkey{label, test, threads}]...)
	if len(g) == 0 {
		return record{}, false
	}
	fig := func(x record) float64 {
		if test == testPoint {
			return x.qps()
		}
		return x.sustainedTPS()
	}
	sort.Slice(g, func(i, j int) bool { return fig(g[i]) < fig(g[j]) })
	return g[(len(g)-1)/2], true
}

func (r results) threads(test string) []int {
	seen := map[int]bool{}
	var out []int
	for k := range r {
		if k.test == test && !seen[k.threads] {
			seen[k.threads] = true
			out = append(out, k.threads)
		}
	}
	sort.Ints(out)
	return out
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

// summary is the last line's figures; see cmdReport for their definitions.
type summary struct {
	SustainedRatio, P95Ratio, BinlogdUS, CatchupS, ProxyVsHAProxy, Rejected float64
}

func (s summary) String() string {
	return fmt.Sprintf("sustained_insert_ratio=%.3f p95_ratio=%.3f binlogd_us_per_txn=%.0f catchup_s=%.2f proxy_vs_haproxy=%.3f rejected_batches=%s",
		s.SustainedRatio, s.P95Ratio, s.BinlogdUS, s.CatchupS, s.ProxyVsHAProxy, countString(s.Rejected))
}

func countString(v float64) string {
	if math.IsNaN(v) {
		return "NaN"
	}
	return fmt.Sprintf("%.0f", v)
}

// summarize computes the last line at thr threads: phxgo through the
// master node's proxy against the semi-sync master reached directly (the
// baseline pays no proxy; phxgo pays its own). Point selects compare the
// master node's proxy with HAProxy in front of the same MariaDB
// (haproxyFor). rejected is chooseRejected's count.
func summarize(r results, thr int, rejected float64) summary {
	nan := math.NaN()
	s := summary{nan, nan, nan, nan, nan, rejected}
	p, okp := r.get(phxMaster, testInsert, thr)
	_, okb := r.get(semiDirect, testInsert, thr)
	if okp && okb {
		s.SustainedRatio = pairedRatio(r, phxMaster, semiDirect, testInsert, thr, record.sustainedTPS)
		s.P95Ratio = pairedRatio(r, phxMaster, semiDirect, testInsert, thr, func(x record) float64 { return x.P95MS })
	}
	if okp {
		s.BinlogdUS = ratio(p.CPUus["binlogd"], p.Txns)
		s.CatchupS = p.CatchupS
	}
	s.ProxyVsHAProxy = pointRatio(r, phxMaster, thr)
	return s
}

// median of ratios xs (sorted in place): with an even count, the
// geometric mean of the two middle values, the middle of ratios (1/2 and
// 2 give 1). Taking the lower one would report the better of two rounds'
// p95 ratios and the worse of their throughput ratios.
func median(xs []float64) float64 {
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return math.Sqrt(xs[n/2-1] * xs[n/2])
}

// pairedRatio is fig(a) / fig(b) at thr threads. With several rounds of
// both (bench.sh runs the systems in turns within each round) it is the
// median of the rounds' ratios, for the reason pointRatio gives; with one,
// the ratio of the median runs.
func pairedRatio(r results, a, b, test string, thr int, fig func(record) float64) float64 {
	ra, rb := r[rkey{a, test, thr}], r[rkey{b, test, thr}]
	if n := min(len(ra), len(rb)); n > 1 {
		rs := make([]float64, n)
		for i := range n {
			rs[i] = ratio(fig(ra[i]), fig(rb[i]))
		}
		return median(rs)
	}
	x, ok1 := r.get(a, test, thr)
	y, ok2 := r.get(b, test, thr)
	if !ok1 || !ok2 {
		return math.NaN()
	}
	return ratio(fig(x), fig(y))
}

// pointRatio compares label's point selects with HAProxy's (haproxyFor).
// With several rounds against phxgo's own HAProxy (bench.sh runs them in
// turns, proxy and HAProxy side by side in each round) it is the median of
// the rounds' ratios: on a shared host the load drifts between rounds by
// more than the difference measured, and a ratio taken within one round
// cancels the drift, a ratio of two medians from different rounds does
// not. One round, or HAProxy in front of the baseline instead: the ratio
// of the median runs.
func pointRatio(r results, label string, thr int) float64 {
	p := r[rkey{label, testPoint, thr}]
	h := r[rkey{anchorLabel(r, label, thr), testPoint, thr}]
	if n := min(len(p), len(h)); n > 1 {
		rs := make([]float64, n)
		for i := range n {
			rs[i] = ratio(p[i].qps(), h[i].qps())
		}
		return median(rs)
	}
	pp, ok1 := r.get(label, testPoint, thr)
	hp, ok2 := haproxyFor(r, label, thr)
	if !ok1 || !ok2 {
		return math.NaN()
	}
	return ratio(pp.qps(), hp.qps())
}

// chooseRejected picks the rejected-batch count of the last line:
// binlogd's metric over the whole benchmark (benchWide, read by bench.sh
// before the first run and after the last, so failed and retried runs
// count too), else the metric summed over the recorded runs, else the
// whole log's count (setup included). NaN when none is known.
func chooseRejected(benchWide float64, r results, fromLog float64) float64 {
	if !math.IsNaN(benchWide) {
		return benchWide
	}
	if m, ok := rejectedFromMetric(r); ok {
		return m
	}
	return fromLog
}

// rejectedFromMetric sums binlogd's rejected-batch counter over every
// phxgo run; false when binlogd exports no such metric.
func rejectedFromMetric(r results) (float64, bool) {
	var sum float64
	found := false
	for _, g := range r {
		for _, rec := range g {
			if rec.RejectedMetric != "" {
				found = true
				sum += rec.Binlogd[rec.RejectedMetric]
			}
		}
	}
	return sum, found
}

func rejectedName(r results) string {
	for _, g := range r {
		for _, rec := range g {
			if rec.RejectedMetric != "" {
				return rec.RejectedMetric
			}
		}
	}
	return ""
}

// countRejectedBatches counts the rejected binlog batches in the output
// of `binlogd log -rejected`.
func countRejectedBatches(r io.Reader) (int, error) {
	n := 0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.Contains(l, " binlog_batch ") && strings.Contains(l, "-> REJECTED") {
			n++
		}
	}
	return n, sc.Err()
}

func cmdReport(args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	path := fs.String("results", "", "results file written by sqlbench run")
	anchor := fs.Int("anchor-threads", 16, "thread count of the last line's figures")
	rejLog := fs.String("rejected-log", "", "output of `binlogd log -rejected` (counted when binlogd exports no rejected-batch metric)")
	rejBench := fs.Float64("rejected-metric-delta", math.NaN(), "binlogd's rejected-batch metric, last run's end minus first run's start (bench.sh: sqlbench rejected)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	f, err := os.Open(*path)
	if err != nil {
		return err
	}
	recs, err := readRecords(f)
	f.Close()
	if err != nil {
		return err
	}
	if len(recs) == 0 {
		return errNoResults
	}
	fromLog := math.NaN()
	if *rejLog != "" {
		lf, err := os.Open(*rejLog)
		if err != nil {
			return err
		}
		n, err := countRejectedBatches(lf)
		lf.Close()
		if err != nil {
			return err
		}
		fromLog = float64(n)
	}
	r := index(recs)
	w := os.Stdout
	printInserts(w, r)
	printCommitCycle(w, r)
	printFixedRate(w, r)
	printPointSelects(w, r)
	fmt.Fprintln(w)
	if m, ok := rejectedFromMetric(r); ok {
		fmt.Fprintf(w, "rejected batches (binlogd's %s): %.0f in the recorded runs, %s from the first run to the last (failed runs included)",
			rejectedName(r), m, countString(*rejBench))
	} else {
		fmt.Fprint(w, "rejected batches: binlogd exports no metric for them")
	}
	fmt.Fprintf(w, "; in the whole log, setup included (binlogd log -rejected): %s\n", countString(fromLog))
	rej := chooseRejected(*rejBench, r, fromLog)
	for _, thr := range r.threads(testInsert) {
		if thr != *anchor {
			fmt.Fprintf(w, "at %d threads: %s\n", thr, summarize(r, thr, rej))
		}
	}
	fmt.Fprintf(w, "(last line: %d threads; phxgo through the master node's proxy vs the semi-sync master directly; point selects: master node's proxy vs HAProxy)\n", *anchor)
	fmt.Fprintln(w, summarize(r, *anchor, rej))
	return nil
}

func printInserts(w io.Writer, r results) {
	thrs := r.threads(testInsert)
	if len(thrs) == 0 {
		return
	}
	fmt.Fprintln(w, "oltp_insert: burst = sysbench's tps; sustained = txns / (run + time until every replica applied them);")
	fmt.Fprintln(w, "latency per commit (ms); x semi = ratio to semisync-direct's median run (the summary lines take the median of the rounds' paired ratios)")
	fmt.Fprintf(w, "%-21s %4s %8s %9s %9s %7s %7s %7s %7s %7s %8s\n",
		"system", "thr", "burst", "sustained", "catchup_s", "avg", "p95", "p99", "err/s", "x semi", "p95 x")
	for _, thr := range thrs {
		b, okb := r.get(semiDirect, testInsert, thr)
		for _, l := range labelOrder {
			x, ok := r.get(l, testInsert, thr)
			if !ok {
				continue
			}
			rs, rp := "-", "-"
			if okb {
				rs = fmt.Sprintf("%.3f", ratio(x.sustainedTPS(), b.sustainedTPS()))
				rp = fmt.Sprintf("%.3f", ratio(x.P95MS, b.P95MS))
			}
			fmt.Fprintf(w, "%-21s %4d %8.0f %9.0f %9.2f %7.2f %7.2f %7.2f %7.1f %7s %8s\n",
				l, thr, x.burstTPS(), x.sustainedTPS(), x.CatchupS, x.AvgMS, x.P95MS, x.P99MS, ratio(x.Errors, x.RunS), rs, rp)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "oltp_insert cost per transaction, run + catch-up: CPU µs by process kind (all of the system's processes of that kind),")
	fmt.Fprintln(w, "disk flushes (MariaDB Innodb_data_fsyncs + Syncs on all 3 servers, + binlogd wal fdatasyncs), machine busy %")
	fmt.Fprintf(w, "%-21s %4s", "system", "thr")
	for _, k := range cpuKinds {
		fmt.Fprintf(w, " %9s", k)
	}
	fmt.Fprintf(w, " %9s %8s %8s %6s\n", "total", "flushes", "wal", "busy")
	for _, thr := range thrs {
		for _, l := range labelOrder {
			x, ok := r.get(l, testInsert, thr)
			if !ok {
				continue
			}
			fmt.Fprintf(w, "%-21s %4d", l, thr)
			var total float64
			for _, k := range cpuKinds {
				v, ok := x.CPUus[k]
				if !ok {
					fmt.Fprintf(w, " %9s", "-")
					continue
				}
				total += v
				fmt.Fprintf(w, " %9.0f", ratio(v, x.Txns))
			}
			wal := "-"
			if v, ok := x.Binlogd["phxgo_wal_syncs_total"]; ok {
				wal = fmt.Sprintf("%.2f", ratio(v, x.Txns))
			}
			fmt.Fprintf(w, " %9.0f %8.2f %8s %5.0f%%\n", ratio(total, x.Txns), ratio(x.flushes(), x.Txns), wal, x.BusyPct)
		}
	}
	var lines []string
	for _, thr := range thrs {
		for _, l := range []string{phxMaster, phxOther, phxDirect} {
			x, ok := r.get(l, testInsert, thr)
			if !ok || x.Binlogd["phxgo_paxos_values_proposed_total"] == 0 {
				continue
			}
			m := x.Binlogd
			ballot := "-" // a results file from before the ballot was kept
			if v, ok := m["phxgo_paxos_ballot"]; ok {
				ballot = fmt.Sprintf("%.0f", v)
			}
			lines = append(lines, fmt.Sprintf("%-21s %4d %8.2f %8.2f %9.2f %9.2f %9.0f %7s",
				l, thr, ratio(m["phxgo_binlogd_captured_transactions_total"], m["phxgo_paxos_values_proposed_total"]),
				ratio(m["phxgo_paxos_commands_proposed_total"], m["phxgo_paxos_values_proposed_total"]),
				1000*ratio(m["phxgo_paxos_commit_latency_seconds_sum"], m["phxgo_paxos_commit_latency_seconds_count"]),
				1000*ratio(m["phxgo_binlogd_semisync_ack_seconds_total"], m["phxgo_binlogd_semisync_acks_total"]),
				m[x.RejectedMetric], ballot))
		}
	}
	if len(lines) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "phxgo's log during those runs: txns per Paxos value, commands per value, avg Paxos commit ms, avg ACK ms, rejected batches,")
		fmt.Fprintln(w, "and the rise of the nodes' promised ballot rounds, summed (0: one Paxos leader throughout the run)")
		fmt.Fprintf(w, "%-21s %4s %8s %8s %9s %9s %9s %7s\n", "system", "thr", "txn/val", "cmd/val", "commit_ms", "ack_ms", "rejected", "ballot+")
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
	}
}

func printPointSelects(w io.Writer, r results) {
	thrs := r.threads(testPoint)
	if len(thrs) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "oltp_point_select: qps, latency ms, ratio to the semi-sync master directly and to HAProxy in front of the same system's master (median of the rounds' ratios; another node's proxy against HAProxy reaching that master by TCP with TLS end to end, as its own link does, when measured), proxy CPU µs per query")
	fmt.Fprintf(w, "%-21s %4s %9s %7s %7s %7s %8s %8s %8s\n", "system", "thr", "qps", "avg", "p95", "p99", "x direct", "x haprx", "proxy_us")
	for _, thr := range thrs {
		d, okd := r.get(semiDirect, testPoint, thr)
		for _, l := range labelOrder {
			x, ok := r.get(l, testPoint, thr)
			if !ok {
				continue
			}
			rd, rh := "-", "-"
			if okd {
				rd = fmt.Sprintf("%.3f", ratio(x.qps(), d.qps()))
			}
			if q := pointRatio(r, l, thr); !math.IsNaN(q) {
				rh = fmt.Sprintf("%.3f", q)
			}
			proxy := x.CPUus["sqlproxy"] + x.CPUus["haproxy"]
			fmt.Fprintf(w, "%-21s %4d %9.0f %7.2f %7.2f %7.2f %8s %8s %8.1f\n",
				l, thr, x.qps(), x.AvgMS, x.P95MS, x.P99MS, rd, rh, ratio(proxy, x.Queries))
		}
	}
}

// printFixedRate shows the inserts run at a fixed offered load (bench.sh
// BENCH_RATE): both systems carry the same work per second, and a rate
// the semi-sync replicas keep up with spreads their apply over the run
// as phxgo's is, where the closed loop lets semi-sync's burst have the
// machine and apply afterwards. Ratios are medians of the rounds' paired
// ratios to the semi-sync master reached directly.
func printFixedRate(w io.Writer, r results) {
	tests := r.fixedRates(testInsert)
	if len(tests) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "oltp_insert at a fixed offered load (sysbench --rate): achieved tps, latency per commit (ms), catch-up s, ratios to semisync-direct (median of the rounds' paired ratios)")
	fmt.Fprintf(w, "%-21s %4s %-16s %8s %7s %7s %7s %9s %7s %7s\n", "system", "thr", "offered", "tps", "avg", "p95", "p99", "catchup_s", "avg x", "p95 x")
	var lines []string
	for _, test := range tests {
		for _, thr := range r.threads(test) {
			for _, l := range labelOrder {
				x, ok := r.get(l, test, thr)
				if !ok {
					continue
				}
				avgX := pairedRatio(r, l, semiDirect, test, thr, func(x record) float64 { return x.AvgMS })
				p95X := pairedRatio(r, l, semiDirect, test, thr, func(x record) float64 { return x.P95MS })
				fmt.Fprintf(w, "%-21s %4d %-16s %8.0f %7.2f %7.2f %7.2f %9.2f %7.3f %7.3f\n",
					l, thr, test, x.burstTPS(), x.AvgMS, x.P95MS, x.P99MS, x.CatchupS, avgX, p95X)
				if l == phxMaster {
					lines = append(lines, fmt.Sprintf("at %s, %d threads: p95_ratio=%.3f avg_ratio=%.3f", test, thr, p95X, avgX))
				}
			}
		}
	}
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}
