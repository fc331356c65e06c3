package wal

import (
	"fmt"
	"sync/atomic"
	"testing"
)

// BenchmarkSaveConcurrent: many goroutines each Save one accepted
// 256-byte value and wait for durability, like concurrent accept RPCs.
// Reports saves/s and how many Saves shared each sync, with one group in
// flight (the old scheme) and with overlapping syncs.
func BenchmarkSaveConcurrent(b *testing.B) {
	for _, n := range []int{1, 4} {
		b.Run(fmt.Sprintf("inflight=%d", n), func(b *testing.B) { benchSaveConcurrent(b, n) })
	}
}

func benchSaveConcurrent(b *testing.B, inflight int) {
	opts := quietOptions()
	opts.MaxSyncsInFlight = inflight
	l := openTest(b, b.TempDir(), opts)
	var next atomic.Uint64
	value := make([]byte, 256)
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1)
			if err := l.Save(Update{Accepted: []Accepted{{Index: i, Ballot: Ballot{Round: 1}, Value: value}}, Chosen: i}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	st := l.Stats()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "saves/s")
	if st.Syncs > 0 {
		b.ReportMetric(float64(st.Saves)/float64(st.Syncs), "saves/sync")
	}
}

// BenchmarkSaveSerial is the one-caller baseline: one sync per Save.
func BenchmarkSaveSerial(b *testing.B) {
	l := openTest(b, b.TempDir(), quietOptions())
	value := make([]byte, 256)
	b.ResetTimer()
	for i := range uint64(b.N) {
		if err := l.Save(Update{Accepted: []Accepted{{Index: i + 1, Value: value}}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "saves/s")
}
