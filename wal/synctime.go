package wal

import (
	"os"
	"sync/atomic"
	"time"
)

// SyncBounds are the upper bounds of the fdatasync-time buckets in
// Stats.SyncHist: 62.5 µs doubling to 4 s, so a Prometheus histogram
// (binlogd/node) shows a disk's p99 as well as its mean.
var SyncBounds = func() []time.Duration {
	b := make([]time.Duration, 17)
	for i := range b {
		b[i] = 62500 * time.Nanosecond << i
	}
	return b
}()

// syncTimes is a lock-free histogram of segment fdatasync times; the
// last bucket counts what exceeds every bound.
type syncTimes struct {
	nanos   atomic.Int64
	buckets [18]atomic.Int64
}

func (s *syncTimes) observe(d time.Duration) {
	s.nanos.Add(int64(d))
	i := 0
	for i < len(SyncBounds) && d > SyncBounds[i] {
		i++
	}
	s.buckets[i].Add(1)
}

// snapshot returns the sum and the per-bucket (not cumulative) counts.
func (s *syncTimes) snapshot() (time.Duration, []int64) {
	out := make([]int64, len(s.buckets))
	for i := range s.buckets {
		out[i] = s.buckets[i].Load()
	}
	return time.Duration(s.nanos.Load()), out
}

// timedFdatasync is fdatasync of a segment, timed into l's histogram.
func (l *Log) timedFdatasync(f *os.File) error {
	start := time.Now()
	err := l.syncer.fdatasync(f)
	l.syncTimes.observe(time.Since(start))
	return err
}
