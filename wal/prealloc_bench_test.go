package wal

import (
	"syscall"
	"testing"
	"time"
)

// BenchmarkPreallocSync: serial synced Saves of a 2,000-byte value (one
// frame and one fdatasync each) into segments that grow by appending and
// into zero-filled ones, in alternating turns of b.N Saves on a fresh Log
// each, so both see the same load. Reports wall and process CPU per sync
// for each and prealloc/append ratios. Run with e.g. -benchtime=400x.
func BenchmarkPreallocSync(b *testing.B) {
	const turns = 6
	value := make([]byte, 2000)
	var wall, cpu [2]time.Duration
	var syncs [2]int64
	for t := range 2 * turns {
		mode := t % 2 // 0 append, 1 prealloc
		opts := quietOptions()
		opts.appendSegments = mode == 0
		l := openTest(b, b.TempDir(), opts)
		waitPrepared(b, l) // the next segment's zeros are not what is measured
		s0 := l.Stats().Syncs
		c0, w0 := cpuTime(b), time.Now()
		for i := range uint64(b.N) {
			if err := l.Save(Update{Accepted: []Accepted{{Index: i + 1, Ballot: Ballot{Round: 1}, Value: value}}}); err != nil {
				b.Fatal(err)
			}
		}
		wall[mode] += time.Since(w0)
		cpu[mode] += cpuTime(b) - c0
		syncs[mode] += l.Stats().Syncs - s0
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
	}
	per := func(d time.Duration, n int64) float64 { return float64(d.Microseconds()) / float64(max(n, 1)) }
	b.ReportMetric(per(wall[0], syncs[0]), "append_wall_us/sync")
	b.ReportMetric(per(wall[1], syncs[1]), "prealloc_wall_us/sync")
	b.ReportMetric(per(cpu[0], syncs[0]), "append_cpu_us/sync")
	b.ReportMetric(per(cpu[1], syncs[1]), "prealloc_cpu_us/sync")
	b.ReportMetric(per(wall[1], syncs[1])/per(wall[0], syncs[0]), "wall_ratio")
	b.ReportMetric(per(cpu[1], syncs[1])/per(cpu[0], syncs[0]), "cpu_ratio")
}

func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// waitPrepared waits until the next segment is zero-filled (with no
// rotation under way: the commit goroutine owns l.prep).
func waitPrepared(tb testing.TB, l *Log) {
	if l.prep == nil {
		return
	}
	err := <-l.prep
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan error, 1)
	done <- nil
	l.prep = done
}
