package main

import (
	"errors"
	"math"
	"os"
	"strings"
	"testing"
)

func TestParseSysbench(t *testing.T) {
	f, err := os.Open("testdata/sysbench_insert.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := parseSysbench(f)
	if err != nil {
		t.Fatal(err)
	}
	if res.Txns != 5464 || res.Queries != 5464 || res.Errors != 0 || res.TotalS != 5.1039 || res.AvgMS != 14.75 || res.MaxMS != 188.47 {
		t.Fatalf("got %+v", res)
	}
	var n int64
	for _, b := range res.Hist {
		n += b.Count
	}
	if n != 5464 {
		t.Fatalf("histogram holds %d events, sysbench ran 5464", n)
	}
	// sysbench printed "95th percentile: 34.95" from the same histogram.
	if p := percentile(res.Hist, 95); math.Abs(p-34.95) > 0.01 {
		t.Fatalf("p95 = %v, sysbench said 34.95", p)
	}
	if p99, p95 := percentile(res.Hist, 99), percentile(res.Hist, 95); p99 < p95 || p99 > res.MaxMS*1.02 {
		t.Fatalf("p99 %v outside [p95 %v, max %v]", p99, p95, res.MaxMS)
	}
}

func TestParseSysbenchRefusesBrokenOutput(t *testing.T) {
	for name, out := range map[string]string{
		"died":         "sysbench 1.0.20\nFATAL: unable to connect to MySQL server on host '127.0.0.1', port 1: 2003\n",
		"no histogram": "    transactions:  10 (1.0 per sec.)\n    total time:  10.0s\n",
	} {
		if _, err := parseSysbench(strings.NewReader(out)); !errors.Is(err, errBadSysbench) {
			t.Errorf("%s: err = %v, want errBadSysbench", name, err)
		}
	}
}

func TestPercentile(t *testing.T) {
	h := []bucket{{1, 90}, {2, 5}, {3, 4}, {10, 1}}
	for _, c := range []struct{ p, want float64 }{{50, 1}, {90, 1}, {91, 2}, {95, 2}, {99, 3}, {100, 10}} {
		if got := percentile(h, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if !math.IsNaN(percentile(nil, 95)) {
		t.Error("percentile of no events is not NaN")
	}
}

func TestGTIDPos(t *testing.T) {
	want, err := parseGTIDPos("0-1-100,1-2-7")
	if err != nil {
		t.Fatal(err)
	}
	for s, covers := range map[string]bool{
		"0-1-100,1-2-7":  true,
		"0-3-101,1-2-7":  true, // another server wrote later transactions of domain 0
		"0-1-99,1-2-7":   false,
		"0-1-100":        false, // domain 1 missing
		"":               false,
		"1-2-8, 0-1-200": true,
	} {
		p, err := parseGTIDPos(s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if p.covers(want) != covers {
			t.Errorf("%q covers %v = %v, want %v", s, want, !covers, covers)
		}
	}
	a, _ := parseGTIDPos("0-1-5")
	b, _ := parseGTIDPos("0-2-9,1-1-1")
	if m := a.merge(b); m[0] != 9 || m[1] != 1 {
		t.Errorf("merge = %v", m)
	}
	for _, bad := range []string{"0-1", "x-1-2", "0-1-2-3"} {
		if _, err := parseGTIDPos(bad); !errors.Is(err, errBadGTID) {
			t.Errorf("%q: err = %v, want errBadGTID", bad, err)
		}
	}
}

func TestParseMetrics(t *testing.T) {
	text := `# HELP phxgo_wal_syncs_total fdatasyncs issued
# TYPE phxgo_wal_syncs_total counter
phxgo_wal_syncs_total 1234
phxgo_paxos_dropped_messages_total{reason="stale"} 2
phxgo_paxos_dropped_messages_total{reason="forged, really"} 3
phxgo_paxos_commit_latency_seconds_sum 1.5e+01
phxgo_capture_rejected_batches_total 4 1700000000000
`
	m, err := parseMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if m["phxgo_wal_syncs_total"] != 1234 || m["phxgo_paxos_dropped_messages_total"] != 5 || m["phxgo_paxos_commit_latency_seconds_sum"] != 15 {
		t.Fatalf("got %v", m)
	}
	if got := rejectedMetric(m); got != "phxgo_capture_rejected_batches_total" {
		t.Fatalf("rejectedMetric = %q", got)
	}
	delete(m, "phxgo_capture_rejected_batches_total")
	if got := rejectedMetric(m); got != "" {
		t.Fatalf("rejectedMetric without one = %q", got)
	}
	if _, err := parseMetrics(strings.NewReader("x{a=\"b\" 1\n")); !errors.Is(err, errBadMetrics) {
		t.Fatalf("err = %v, want errBadMetrics", err)
	}
}

func TestProcCPUTicks(t *testing.T) {
	// A command name with spaces and a ')' in it; utime 1500, stime 250.
	stat := "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 9000 0 0 0 1500 250 0 0 20 0 37 0 12345 1000000 5000"
	n, err := procCPUTicks(stat)
	if err != nil || n != 1750 {
		t.Fatalf("got %d, %v; want 1750", n, err)
	}
	if _, err := procCPUTicks("4242 (x) S 1 2"); !errors.Is(err, errBadProcStat) {
		t.Fatalf("short line: err = %v", err)
	}
}

func TestCountRejectedBatches(t *testing.T) {
	out := `first=1 chosen=900 applied=900
     512 node=1 seq=77 binlog_batch epoch=2 0-1-17487..0-1-17494 txns=7 bytes=3000 more=false cont=false -> REJECTED: prev_gtid 0-1-17494, expected 0-1-17487
     513 node=1 seq=78 binlog_batch epoch=2 0-1-17494..0-1-17500 txns=6 bytes=2900 more=false cont=false -> REJECTED: prev_gtid 0-1-17494, expected 0-1-17487 DUPLICATE of index 400
     600 node=2 seq=3 lease_request candidate=2 seen=4 renew=false -> REJECTED: not the master's
state: master=1 epoch=2
`
	n, err := countRejectedBatches(strings.NewReader(out))
	if err != nil || n != 2 {
		t.Fatalf("got %d, %v; want 2 (lease requests are not batches)", n, err)
	}
}

func TestPidFlag(t *testing.T) {
	p := pidFlag{}
	if err := p.Set("mariadbd=10,11,12"); err != nil {
		t.Fatal(err)
	}
	if err := p.Set("haproxy="); err != nil {
		t.Fatal(err)
	}
	if len(p["mariadbd"]) != 3 || p["mariadbd"][2] != 12 {
		t.Fatalf("got %v", p)
	}
	if _, ok := p["haproxy"]; !ok {
		t.Fatal("a kind with no pid is dropped; its column would vanish")
	}
	for _, bad := range []string{"nokind", "=1", "x=abc", "x=-3"} {
		if err := p.Set(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
