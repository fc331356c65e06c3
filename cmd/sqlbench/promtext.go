package main

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// parseMetrics reads Prometheus' text format and sums each metric's
// samples over their labels: "phxgo_paxos_dropped_messages_total{reason=...}"
// becomes one phxgo_paxos_dropped_messages_total. The benchmark only needs
// per-node totals of counters.
func parseMetrics(r io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for ln := 1; sc.Scan(); ln++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, rest := line, ""
		if i := strings.IndexByte(line, '{'); i >= 0 {
			j := strings.LastIndexByte(line, '}')
			if j < i {
				return nil, fmt.Errorf("%w: line %d: %q", errBadMetrics, ln, line)
			}
			name, rest = line[:i], line[j+1:]
		} else if i := strings.IndexAny(line, " \t"); i >= 0 {
			name, rest = line[:i], line[i:]
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return nil, fmt.Errorf("%w: line %d: %q", errBadMetrics, ln, line)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %q", errBadMetrics, ln, line)
		}
		out[name] += v
	}
	return out, sc.Err()
}

// rejectedMetric names the binlogd metric counting rejected binlog batches,
// whatever its exact name: a metric name with both "reject" and "batch" in
// it. "" when binlogd exports none.
func rejectedMetric(m map[string]float64) string {
	best := ""
	for name := range m {
		if strings.Contains(name, "reject") && strings.Contains(name, "batch") && (best == "" || name < best) {
			best = name
		}
	}
	return best
}

// procCPUTicks reads utime+stime (clock ticks, all threads) from the text
// of /proc/<pid>/stat. The command name may hold spaces and parentheses, so
// fields are counted after the last ')'.
func procCPUTicks(stat string) (int64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("%w: no ')' in %q", errBadProcStat, stat)
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("%w: %d fields", errBadProcStat, len(f)+2)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("%w: utime %q stime %q", errBadProcStat, f[11], f[12])
	}
	return u + s, nil
}
