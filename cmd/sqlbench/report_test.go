package main

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

func insertRun(label string, thr int, txns, runS, catchup, p95, binlogdUS float64) record {
	return record{Label: label, Test: testInsert, Threads: thr, Txns: txns, Queries: txns, RunS: runS, CatchupS: catchup, P95MS: p95,
		CPUus: map[string]float64{"binlogd": binlogdUS * txns}, Binlogd: map[string]float64{}}
}

func pointRun(label string, thr int, queries, runS float64) record {
	return record{Label: label, Test: testPoint, Threads: thr, Queries: queries, Txns: queries, RunS: runS}
}

func TestSummary(t *testing.T) {
	recs := []record{
		// semi-sync: 2,000 tps burst for 20 s, but its replicas need 20 s more: 1,000 sustained.
		insertRun(semiDirect, 16, 40000, 20, 20, 10, 0),
		// phxgo: 1,200 tps, caught up after 0.5 s: 24,000 / 20.5.
		insertRun(phxMaster, 16, 24000, 20, 0.5, 15, 300),
		insertRun(phxMaster, 64, 30000, 20, 1, 40, 200),
		insertRun(semiDirect, 64, 50000, 20, 30, 20, 0),
		pointRun(semiHAProxy, 16, 300000, 20),
		pointRun(phxMaster, 16, 270000, 20),
	}
	s := summarize(index(recs), 16, math.NaN())
	if want := 24000 / 20.5 / 1000; math.Abs(s.SustainedRatio-want) > 1e-9 {
		t.Errorf("sustained ratio %v, want %v", s.SustainedRatio, want)
	}
	if s.P95Ratio != 1.5 || s.BinlogdUS != 300 || s.CatchupS != 0.5 || math.Abs(s.ProxyVsHAProxy-0.9) > 1e-9 {
		t.Errorf("got %+v", s)
	}
	if !math.IsNaN(s.Rejected) {
		t.Errorf("rejected %v without a metric or a log count; want NaN", s.Rejected)
	}
	line := s.String()
	if want := "sustained_insert_ratio=1.171 p95_ratio=1.500 binlogd_us_per_txn=300 catchup_s=0.50 proxy_vs_haproxy=0.900 rejected_batches=NaN"; line != want {
		t.Errorf("line\n%s\nwant\n%s", line, want)
	}
	if s64 := summarize(index(recs), 64, 3); s64.SustainedRatio != (30000/21.0)/(50000/50.0) || s64.Rejected != 3 {
		t.Errorf("64 threads: %+v", s64)
	}
}

// The proxy is compared with HAProxy in front of the same MariaDB when
// that was measured, else with the baseline's.
func TestProxyAnchor(t *testing.T) {
	recs := []record{
		pointRun(semiHAProxy, 16, 400000, 20),
		pointRun(phxMaster, 16, 270000, 20),
	}
	if s := summarize(index(recs), 16, 0); math.Abs(s.ProxyVsHAProxy-0.675) > 1e-9 {
		t.Errorf("without phxgo's HAProxy: proxy_vs_haproxy %v, want 0.675 (the baseline's)", s.ProxyVsHAProxy)
	}
	recs = append(recs, pointRun(phxHAProxy, 16, 300000, 20))
	if s := summarize(index(recs), 16, 0); math.Abs(s.ProxyVsHAProxy-0.9) > 1e-9 {
		t.Errorf("proxy_vs_haproxy %v, want 0.9 (HAProxy in front of phxgo's master)", s.ProxyVsHAProxy)
	}
}

// Another node's proxy reaches the master's MariaDB by TCP: it is
// compared with HAProxy doing the same when that was measured, and the
// master node's proxy still with the socket one.
func TestOtherProxyAnchorIsTCP(t *testing.T) {
	recs := []record{
		pointRun(phxHAProxy, 16, 300000, 20),
		pointRun(phxMaster, 16, 270000, 20),
		pointRun(phxOther, 16, 200000, 20),
	}
	if got := pointRatio(index(recs), phxOther, 16); math.Abs(got-2.0/3) > 1e-9 {
		t.Errorf("without a TCP HAProxy: other proxy %v, want 0.667 (the socket one's)", got)
	}
	recs = append(recs, pointRun(phxHAProxyTCP, 16, 250000, 20))
	r := index(recs)
	if got := pointRatio(r, phxOther, 16); math.Abs(got-0.8) > 1e-9 {
		t.Errorf("other proxy %v, want 0.8 (HAProxy by TCP)", got)
	}
	if got := pointRatio(r, phxMaster, 16); math.Abs(got-0.9) > 1e-9 {
		t.Errorf("master's proxy %v, want 0.9 (HAProxy by the socket)", got)
	}
	if s := summarize(r, 16, 0); math.Abs(s.ProxyVsHAProxy-0.9) > 1e-9 {
		t.Errorf("proxy_vs_haproxy %v, want the master's proxy's 0.9", s.ProxyVsHAProxy)
	}
	// With TLS through HAProxy measured too, that is the anchor: the
	// proxy's link to MariaDB is TLS.
	r = index(append(recs, pointRun(phxHAProxyTCPTLS, 16, 220000, 20)))
	if got := pointRatio(r, phxOther, 16); math.Abs(got-200.0/220) > 1e-9 {
		t.Errorf("other proxy %v, want 0.909 (HAProxy by TCP, TLS end to end)", got)
	}
	if got := pointRatio(r, phxMaster, 16); math.Abs(got-0.9) > 1e-9 {
		t.Errorf("master's proxy %v, want 0.9 (HAProxy by the socket)", got)
	}
}

func TestSummaryPrefersTheMetric(t *testing.T) {
	a := insertRun(phxMaster, 16, 1000, 10, 0, 5, 100)
	a.RejectedMetric, a.Binlogd["phxgo_capture_rejected_batches_total"] = "phxgo_capture_rejected_batches_total", 2
	b := insertRun(phxOther, 16, 1000, 10, 0, 5, 100)
	b.RejectedMetric, b.Binlogd["phxgo_capture_rejected_batches_total"] = "phxgo_capture_rejected_batches_total", 0
	c := insertRun(semiDirect, 16, 1000, 10, 0, 5, 0)
	r := index([]record{a, b, c})
	if got := chooseRejected(math.NaN(), r, 50); got != 2 {
		t.Errorf("rejected %v, want the runs' metric 2 (the log's 50 counts the whole log)", got)
	}
	// Read across the whole bench, the metric also counts failed runs.
	if got := chooseRejected(5, r, 50); got != 5 {
		t.Errorf("rejected %v, want the bench-wide 5", got)
	}
	if s := summarize(r, 16, chooseRejected(5, r, 50)); s.Rejected != 5 {
		t.Errorf("summary rejected %v", s.Rejected)
	}
	// A metric that exists and counted nothing is a real 0.
	a.Binlogd["phxgo_capture_rejected_batches_total"] = 0
	if got := chooseRejected(math.NaN(), index([]record{a, c}), math.NaN()); got != 0 {
		t.Errorf("rejected %v, want 0", got)
	}
	// No metric: the log's count; nothing at all: NaN.
	if got := chooseRejected(math.NaN(), index([]record{c}), 4); got != 4 {
		t.Errorf("rejected %v, want the log's 4", got)
	}
	if got := chooseRejected(math.NaN(), index([]record{c}), math.NaN()); !math.IsNaN(got) {
		t.Errorf("rejected %v, want NaN", got)
	}
}

func TestMedianOfRounds(t *testing.T) {
	r := index([]record{
		insertRun(semiDirect, 16, 1000, 10, 0, 9, 0),
		insertRun(semiDirect, 16, 3000, 10, 0, 7, 0),
		insertRun(semiDirect, 16, 2000, 10, 0, 8, 0),
	})
	got, ok := r.get(semiDirect, testInsert, 16)
	if !ok || got.Txns != 2000 {
		t.Fatalf("median run = %+v", got)
	}
}

func TestReadRecordsRoundTrip(t *testing.T) {
	in := `{"label":"semisync-direct","test":"oltp_insert","threads":16,"txns":5464,"queries":5464,"run_s":5.1,"catchup_s":14.5,"p95_ms":34.9,"cpu_us":{"mariadbd":7280000},"server":{"Innodb_data_fsyncs":12480,"Syncs":12122},"binlogd":{}}

{"label":"phxgo-proxy-master","test":"oltp_insert","threads":16,"txns":100,"run_s":1,"binlogd":{"phxgo_wal_syncs_total":50}}
`
	recs, err := readRecords(strings.NewReader(in))
	if err != nil || len(recs) != 2 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	if f := recs[0].flushes() / recs[0].Txns; math.Abs(f-(12480+12122)/5464.0) > 1e-9 {
		t.Errorf("flushes per txn %v", f)
	}
	if f := recs[1].flushes(); f != 50 {
		t.Errorf("phxgo flushes %v, want the wal's 50", f)
	}
	if _, err := readRecords(strings.NewReader("{not json\n")); err == nil {
		t.Error("bad line accepted")
	}
}

// With several rounds, the proxy's figure is the median of each round's
// ratio to HAProxy measured beside it, not the ratio of the two median
// runs: here the load fell between rounds, so the median runs come from
// different rounds (270k over 400k = 0.675) while in every round the
// proxy ran at 0.9 of HAProxy or better.
func TestProxyRatioPairsRounds(t *testing.T) {
	recs := []record{
		pointRun(phxHAProxy, 16, 200000, 20), pointRun(phxMaster, 16, 180000, 20), // round 1: 0.9
		pointRun(phxHAProxy, 16, 400000, 20), pointRun(phxMaster, 16, 380000, 20), // round 2: 0.95
		pointRun(phxHAProxy, 16, 600000, 20), pointRun(phxMaster, 16, 270000, 20), // round 3: 0.45
	}
	if s := summarize(index(recs), 16, 0); math.Abs(s.ProxyVsHAProxy-0.9) > 1e-9 {
		t.Errorf("proxy_vs_haproxy %v, want 0.9 (median of 0.9, 0.95, 0.45)", s.ProxyVsHAProxy)
	}
}

// With several rounds, the insert figures of the last line pair each
// round's phxgo run with that round's semi-sync run, as point selects do:
// a round on a loaded host slows both.
func TestInsertRatiosPairRounds(t *testing.T) {
	recs := []record{
		insertRun(semiDirect, 16, 40000, 20, 0, 10, 0), insertRun(phxMaster, 16, 48000, 20, 0, 12, 0), // 1.2, p95 1.2
		insertRun(semiDirect, 16, 20000, 20, 0, 30, 0), insertRun(phxMaster, 16, 26000, 20, 0, 33, 0), // 1.3, p95 1.1
		insertRun(semiDirect, 16, 30000, 20, 0, 10, 0), insertRun(phxMaster, 16, 21000, 20, 0, 25, 0), // 0.7, p95 2.5
	}
	s := summarize(index(recs), 16, 0)
	if math.Abs(s.SustainedRatio-1.2) > 1e-9 || math.Abs(s.P95Ratio-1.2) > 1e-9 {
		t.Errorf("sustained %v p95 %v, want 1.2 and 1.2 (medians of the rounds' ratios)", s.SustainedRatio, s.P95Ratio)
	}
}

// Runs at a fixed offered load get their own table and line: the same
// rounds paired, apart from the closed-loop runs of the same test.
func TestFixedRateRuns(t *testing.T) {
	at := func(label string, p95, avg float64) record {
		r := insertRun(label, 16, 6000, 20, 0, p95, 0)
		r.Test, r.AvgMS = rateTest(testInsert, 300), avg
		return r
	}
	recs := []record{
		insertRun(semiDirect, 16, 40000, 20, 20, 10, 0), // closed loop: not in the table
		at(semiDirect, 6, 3), at(phxMaster, 9, 6),       // round 1: p95 1.5x, avg 2x
		at(phxMaster, 16, 8), at(semiDirect, 8, 2), // round 2: 2x, 4x
		at(phxMaster, 30, 9), at(semiDirect, 10, 3), // round 3: 3x, 3x
	}
	var b strings.Builder
	printFixedRate(&b, index(recs))
	out := b.String()
	if want := "at oltp_insert@300, 16 threads: p95_ratio=2.000 avg_ratio=3.000"; !strings.Contains(out, want) {
		t.Fatalf("no %q in:\n%s", want, out)
	}
	if got := strings.Count(out, "oltp_insert@300"); got != 3 {
		t.Fatalf("oltp_insert@300 appears %d times, want 2 rows and the line:\n%s", got, out)
	}
	var none strings.Builder
	printFixedRate(&none, index(recs[:1]))
	if none.Len() != 0 {
		t.Fatalf("closed-loop runs only, yet a fixed-rate table:\n%s", none.String())
	}
}

// The fixed-rate table lists the light load before the sustained one.
func TestFixedRatesByRate(t *testing.T) {
	r := index([]record{
		{Label: semiDirect, Test: rateTest(testInsert, 1200), Threads: 16},
		{Label: semiDirect, Test: rateTest(testInsert, 300), Threads: 16},
		{Label: semiDirect, Test: testInsert, Threads: 16},
		{Label: semiDirect, Test: rateTest(testInsert, 50), Threads: 16},
	})
	got := r.fixedRates(testInsert)
	want := []string{"oltp_insert@50", "oltp_insert@300", "oltp_insert@1200"}
	if len(got) != len(want) {
		t.Fatalf("fixedRates = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("fixedRates = %v, want %v", got, want)
		}
	}
}

// The log table says whether a new Paxos leader came during a run: a
// rejected batch with a ballot rise is a reordering after the change, one
// without it is not.
func TestLogTableShowsBallotRise(t *testing.T) {
	run := func(label string, ballot float64, keep bool) record {
		r := insertRun(label, 16, 10000, 10, 0, 10, 100)
		r.RejectedMetric = "phxgo_capture_rejected_batches_total"
		r.Binlogd = map[string]float64{"phxgo_paxos_values_proposed_total": 1000, "phxgo_binlogd_captured_transactions_total": 10000,
			"phxgo_capture_rejected_batches_total": 1}
		if keep {
			r.Binlogd["phxgo_paxos_ballot"] = ballot
		}
		return r
	}
	var b bytes.Buffer
	printInserts(&b, index([]record{run(phxMaster, 3, true), run(phxDirect, 0, false)}))
	out := b.String()
	for _, want := range []string{"ballot+", "phxgo-proxy-master      16    10.00", "1       3\n", "1       -\n"} {
		if !bytes.Contains([]byte(out), []byte(want)) {
			t.Errorf("log table lacks %q:\n%s", want, out)
		}
	}
}

// With two rounds the last line's ratios are the geometric mean of the
// two rounds' ratios, not the lower one: that would report the better p95
// ratio and the worse throughput ratio.
func TestPairedRatioOfTwoRounds(t *testing.T) {
	recs := []record{
		insertRun(semiDirect, 16, 20000, 20, 0, 10, 0),
		insertRun(phxMaster, 16, 24000, 20, 0, 12, 0), // round 1: p95 1.2x
		insertRun(semiDirect, 16, 20000, 20, 0, 5, 0),
		insertRun(phxMaster, 16, 20000, 20, 0, 15, 0), // round 2: p95 3.0x
	}
	s := summarize(index(recs), 16, 0)
	if want := math.Sqrt(1.2 * 3.0); math.Abs(s.P95Ratio-want) > 1e-9 {
		t.Errorf("p95 ratio %v, want %v (between 1.2 and 3.0)", s.P95Ratio, want)
	}
	if want := math.Sqrt(1.2); math.Abs(s.SustainedRatio-want) > 1e-9 {
		t.Errorf("sustained ratio %v, want %v (between 1.2 and 1.0)", s.SustainedRatio, want)
	}
	if m := median([]float64{2, 0.5}); m != 1 {
		t.Errorf("median of 1/2 and 2: %v, want 1", m)
	}
	if m := median([]float64{3, 1, 2}); m != 2 {
		t.Errorf("median of three: %v", m)
	}
}
