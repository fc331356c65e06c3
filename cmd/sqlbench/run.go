package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"phxgo/internal/cli"
)

// record is one measured run, a line of the results file (JSON).
type record struct {
	Label   string `json:"label"` // system and path, e.g. semisync-direct, phxgo-proxy-master
	Test    string `json:"test"`
	Threads int    `json:"threads"`

	Txns     float64 `json:"txns"`
	Queries  float64 `json:"queries"`
	Errors   float64 `json:"errors"`
	RunS     float64 `json:"run_s"`     // sysbench's total time
	CatchupS float64 `json:"catchup_s"` // sysbench's end until every replica applied the master's last GTID
	AvgMS    float64 `json:"avg_ms"`
	P95MS    float64 `json:"p95_ms"`
	P99MS    float64 `json:"p99_ms"`
	MaxMS    float64 `json:"max_ms"`

	// Over the run and the catch-up:
	CPUus   map[string]float64 `json:"cpu_us"`  // process kind -> CPU µs
	Server  map[string]float64 `json:"server"`  // MariaDB counters, summed over the system's servers
	Binlogd map[string]float64 `json:"binlogd"` // binlogd metrics, summed over nodes
	BusyPct float64            `json:"busy_pct"`

	RejectedMetric string `json:"rejected_metric,omitempty"` // the binlogd metric counting rejected batches ("" none)
}

func (r record) burstTPS() float64     { return ratio(r.Txns, r.RunS) }
func (r record) sustainedTPS() float64 { return ratio(r.Txns, r.RunS+r.CatchupS) }
func (r record) qps() float64          { return ratio(r.Queries, r.RunS) }

// flushes: disk flushes of the system's MariaDB servers and binlogds.
func (r record) flushes() float64 {
	return r.Server["Innodb_data_fsyncs"] + r.Server["Syncs"] + r.Binlogd["phxgo_wal_syncs_total"]
}

// binlogd metrics a run keeps (summed over nodes); the metric counting
// rejected batches is kept too, whatever its name.
var keptMetrics = []string{
	"phxgo_wal_syncs_total",
	"phxgo_paxos_values_proposed_total",
	"phxgo_paxos_commands_proposed_total",
	"phxgo_paxos_commit_latency_seconds_sum",
	"phxgo_paxos_commit_latency_seconds_count",
	"phxgo_binlogd_captured_transactions_total",
	"phxgo_binlogd_semisync_acks_total",
	"phxgo_binlogd_semisync_ack_seconds_total",
	"phxgo_capture_batches_total",
	"phxgo_capture_propose_to_durable_seconds_total",
	"phxgo_capture_overlapped_batches_total",
	"phxgo_capture_starved_batches_total",
	"phxgo_capture_starved_seconds_total",
	// A gauge: its rise over a run, summed over the nodes, is 0 when one
	// Paxos leader led throughout. A new leader can reorder batches in
	// flight, which the log then rejects and capture proposes again.
	"phxgo_paxos_ballot",
}

// pidFlag is -pids KIND=PID,PID (repeatable).
type pidFlag map[string][]int

func (p pidFlag) String() string { return fmt.Sprint(map[string][]int(p)) }
func (p pidFlag) Set(s string) error {
	kind, list, ok := strings.Cut(s, "=")
	if !ok || kind == "" {
		return fmt.Errorf("want KIND=PID,PID, got %q", s)
	}
	for _, f := range splitList(list) {
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return fmt.Errorf("bad pid %q in %q", f, s)
		}
		p[kind] = append(p[kind], n)
	}
	if _, ok := p[kind]; !ok {
		p[kind] = nil // a kind with no process yet still shows as 0
	}
	return nil
}

// cmdRun measures one sysbench run the same way for every system: counters
// before, sysbench, then wait until every replica applied the master's
// @@gtid_binlog_pos, counters after. CPU and flushes include the catch-up.
func cmdRun(args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	label := fs.String("label", "", "system and path, e.g. semisync-direct (the report's row name)")
	test := fs.String("test", "oltp_insert", "sysbench test")
	threads := fs.Int("threads", 16, "sysbench threads")
	secs := fs.Int("seconds", 20, "sysbench --time")
	rate := fs.Int("rate", 0, "sysbench --rate: a fixed offered load in transactions per second (0: closed loop); the record's test is then TEST@RATE")
	target := fs.String("target", "", "address sysbench connects to (host:port)")
	master := fs.String("master", "", "the system's master MariaDB")
	replicas := fs.String("replicas", "", "its replicas, comma-separated")
	user := fs.String("user", "app", "MariaDB user (password: $SQLBENCH_PASSWORD)")
	metrics := fs.String("metrics", "", "binlogd /metrics URLs, comma-separated")
	out := fs.String("out", "", "results file (a JSON line is appended)")
	logPath := fs.String("log", "", "file for sysbench's output")
	timeout := fs.Duration("catchup-timeout", 10*time.Minute, "longest wait for the replicas")
	pids := pidFlag{}
	fs.Var(pids, "pids", "KIND=PID,PID: processes whose CPU is counted, by kind (repeatable)")
	if err := cli.ParseArgs(fs, args); err != nil { // what is left goes to sysbench
		return err
	}
	rs := splitList(*replicas)
	if *label == "" || *target == "" || *master == "" || len(rs) == 0 || *out == "" {
		return fmt.Errorf("%w: -label, -target, -master, -replicas and -out are required", errBadFlags)
	}
	pass := os.Getenv("SQLBENCH_PASSWORD")
	servers := append([]string{*master}, rs...)
	dbs, closeAll, err := openAll(servers, *user, pass)
	if err != nil {
		return err
	}
	defer closeAll()
	var serverDBs []*sql.DB
	reps := map[string]*sql.DB{}
	for _, a := range servers {
		serverDBs = append(serverDBs, dbs[a])
	}
	for _, a := range rs {
		reps[a] = dbs[a]
	}
	urls := splitList(*metrics)

	ctx := context.Background()
	before, err := take(ctx, pids, serverDBs, urls)
	if err != nil {
		return fmt.Errorf("counters before the run: %w", err)
	}
	host, port, ok := strings.Cut(*target, ":")
	if !ok {
		return fmt.Errorf("%w: -target %q is not host:port", errBadFlags, *target)
	}
	sbArgs := append([]string{*test}, fs.Args()...)
	sbArgs = append(sbArgs, "--mysql-host="+host, "--mysql-port="+port, "--mysql-user="+*user, "--mysql-password="+pass,
		"--threads="+strconv.Itoa(*threads), "--time="+strconv.Itoa(*secs),
		"--report-interval=0", "--histogram=on", "--percentile=95")
	if *rate < 0 {
		return fmt.Errorf("%w: -rate %d is negative", errBadFlags, *rate)
	}
	if *rate > 0 {
		sbArgs = append(sbArgs, "--rate="+strconv.Itoa(*rate))
	}
	sbArgs = append(sbArgs, "run")
	var sbOut bytes.Buffer
	cmd := exec.Command("sysbench", sbArgs...)
	cmd.Stdout, cmd.Stderr = &sbOut, &sbOut
	runErr := cmd.Run()
	end := time.Now()
	if *logPath != "" {
		if err := os.WriteFile(*logPath, sbOut.Bytes(), 0o644); err != nil {
			return err
		}
	}
	if runErr != nil {
		return fmt.Errorf("%w (%v): %s", errSysbenchFailed, runErr, firstFatal(sbOut.String()))
	}
	sb, err := parseSysbench(bytes.NewReader(sbOut.Bytes()))
	if err != nil {
		return err
	}

	wctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	want, err := masterPos(wctx, dbs[*master])
	if err != nil {
		return err
	}
	caught, err := waitApplied(wctx, want, reps)
	if err != nil {
		return err
	}
	after, err := take(ctx, pids, serverDBs, urls)
	if err != nil {
		return fmt.Errorf("counters after the run: %w", err)
	}

	rec := record{
		Label: *label, Test: rateTest(*test, *rate), Threads: *threads,
		Txns: sb.Txns, Queries: sb.Queries, Errors: sb.Errors, RunS: sb.TotalS,
		CatchupS: max(0, caught.Sub(end).Seconds()),
		AvgMS:    sb.AvgMS, P95MS: percentile(sb.Hist, 95), P99MS: percentile(sb.Hist, 99), MaxMS: sb.MaxMS,
		CPUus: map[string]float64{}, Server: map[string]float64{}, Binlogd: map[string]float64{},
	}
	for kind := range pids {
		rec.CPUus[kind] = float64(after.cpuTicks[kind]-before.cpuTicks[kind]) * 1e6 / clockTicks
	}
	for _, k := range serverCounters {
		rec.Server[k] = after.server[k] - before.server[k]
	}
	for _, k := range masterCounters {
		k = masterKey(k)
		rec.Server[k] = after.server[k] - before.server[k]
	}
	rec.RejectedMetric = rejectedMetric(after.metrics)
	for _, k := range append(keptMetrics, rec.RejectedMetric) {
		if _, ok := after.metrics[k]; ok && k != "" {
			rec.Binlogd[k] = after.metrics[k] - before.metrics[k]
		}
	}
	if dt := after.total - before.total; dt > 0 {
		rec.BusyPct = float64(after.busy-before.busy) * 100 / float64(dt)
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(*out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Println(progressLine(rec))
	return nil
}

// firstFatal is the first line of sysbench's output that says why it failed.
func firstFatal(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "FATAL") || strings.Contains(l, "error") {
			return strings.TrimSpace(l)
		}
	}
	if len(out) > 300 {
		out = out[len(out)-300:]
	}
	return strings.TrimSpace(out)
}

// progressLine is what bench.sh shows as each run ends.
func progressLine(r record) string {
	if r.Test == testPoint {
		return fmt.Sprintf("%s %s %d: %.0f qps, p95 %.2f ms, p99 %.2f ms, %.0f%% busy",
			r.Label, r.Test, r.Threads, r.qps(), r.P95MS, r.P99MS, r.BusyPct)
	}
	return fmt.Sprintf("%s %s %d: %.0f tps burst, %.0f sustained, p95 %.2f ms, p99 %.2f ms, catch-up %.2f s, %.0f%% busy",
		r.Label, r.Test, r.Threads, r.burstTPS(), r.sustainedTPS(), r.P95MS, r.P99MS, r.CatchupS, r.BusyPct)
}
