package main

import (
	"context"
	"fmt"
	"time"

	"phxgo/paxos"
)

// compactStats sums the Compact calls of -compact.
type compactStats struct {
	calls, cut int // calls, and calls that moved FirstIndex
	total, max time.Duration
	first      uint64 // the leader's FirstIndex at the end
}

func (s compactStats) String() string {
	mean := time.Duration(0)
	if s.calls > 0 {
		mean = s.total / time.Duration(s.calls)
	}
	return fmt.Sprintf("compactions=%d cut=%d mean_ms=%.1f max_ms=%.1f first_index=%d",
		s.calls, s.cut, mean.Seconds()*1000, s.max.Seconds()*1000, s.first)
}

// compactLoop compacts every node's log to its applied index less keep,
// every period, until ctx ends: the load binlogd's log retention puts on
// the wal (a compaction that drops whole buckets of the log).
func compactLoop(ctx context.Context, ns map[uint32]*paxos.Node, period time.Duration, keep uint64) compactStats {
	var s compactStats
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return s
		case <-t.C:
		}
		for _, n := range ns {
			applied := n.Applied()
			if applied <= keep {
				continue
			}
			before := n.Status().FirstIndex
			t0 := time.Now()
			first, err := n.Compact(ctx, applied-keep)
			d := time.Since(t0)
			if err != nil {
				if ctx.Err() == nil {
					fmt.Printf("compact: %v\n", err)
				}
				continue
			}
			s.calls++
			s.total += d
			s.max = max(s.max, d)
			if first > before {
				s.cut++
			}
			s.first = max(s.first, first)
		}
	}
}
