package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// sysbenchResult is what one `sysbench ... run --histogram=on` printed.
type sysbenchResult struct {
	Txns, Queries, Errors float64
	TotalS                float64 // "total time"
	AvgMS, MaxMS          float64
	Hist                  []bucket // latency histogram, ascending
}

// bucket is one line of sysbench's latency histogram: Count events took
// about MS milliseconds (sysbench's buckets are logarithmic, about 1.5%
// wide, so a percentile read from them is within 1.5%).
type bucket struct {
	MS    float64
	Count int64
}

var histLine = regexp.MustCompile(`^\s*([0-9.]+)\s+\|[* ]*\s(\d+)\s*$`)

// parseSysbench reads sysbench's report. It fails on output without a
// transaction count or a histogram (sysbench died, or --histogram was off),
// so a broken run never becomes a row of zeros.
func parseSysbench(r io.Reader) (sysbenchResult, error) {
	var res sysbenchResult
	var haveTxns bool
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	// first number after the colon: "transactions:  123  (6.1 per sec.)"
	first := func(line string) (float64, error) {
		_, v, _ := strings.Cut(line, ":")
		f := strings.Fields(v)
		if len(f) == 0 {
			return 0, fmt.Errorf("sysbench: no value in %q", line)
		}
		return strconv.ParseFloat(strings.TrimSuffix(f[0], "s"), 64)
	}
	for sc.Scan() {
		line := sc.Text()
		t := strings.TrimSpace(line)
		var err error
		switch {
		case histLine.MatchString(line):
			m := histLine.FindStringSubmatch(line)
			ms, err1 := strconv.ParseFloat(m[1], 64)
			n, err2 := strconv.ParseInt(m[2], 10, 64)
			if err1 != nil || err2 != nil {
				return res, fmt.Errorf("sysbench: bad histogram line %q", line)
			}
			res.Hist = append(res.Hist, bucket{ms, n})
		case strings.HasPrefix(t, "transactions:"):
			res.Txns, err = first(t)
			haveTxns = true
		case strings.HasPrefix(t, "queries:"):
			res.Queries, err = first(t)
		case strings.HasPrefix(t, "ignored errors:"):
			res.Errors, err = first(t)
		case strings.HasPrefix(t, "total time:"):
			res.TotalS, err = first(t)
		case strings.HasPrefix(t, "avg:"):
			res.AvgMS, err = first(t)
		case strings.HasPrefix(t, "max:"):
			res.MaxMS, err = first(t)
		}
		if err != nil {
			return res, fmt.Errorf("sysbench: %q: %w", t, err)
		}
	}
	if err := sc.Err(); err != nil {
		return res, err
	}
	if !haveTxns || res.TotalS <= 0 {
		return res, fmt.Errorf("%w: no transactions or total time in sysbench's output", errBadSysbench)
	}
	if len(res.Hist) == 0 {
		return res, fmt.Errorf("%w: no latency histogram (run sysbench with --histogram=on)", errBadSysbench)
	}
	return res, nil
}

// percentile p (0..100) of the histogram, computed as sysbench computes its
// own: the smallest bucket at which the running count reaches p% of all.
func percentile(h []bucket, p float64) float64 {
	var total int64
	for _, b := range h {
		total += b.Count
	}
	if total == 0 {
		return math.NaN()
	}
	need := int64(math.Ceil(float64(total) * p / 100))
	var cum int64
	for _, b := range h {
		cum += b.Count
		if cum >= need {
			return b.MS
		}
	}
	return h[len(h)-1].MS
}
