package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"phxgo/wal"
)

// A timeline splits the measured phase into slices of -timeline and
// prints, per slice, the commits that ended in it (rate, p50, p99, max
// latency) and the memtable rotations each node's wal made, so a tail can
// be told apart from a steady state (is the p99 tail the rotations?).

// sample is one commit: when it ended, from the start, and its latency.
type sample struct{ end, lat time.Duration }

// rotationLog records each wal's rotation count once per slice.
type rotationLog struct {
	every time.Duration
	ids   []uint32
	rows  [][]int64 // per slice, per id: rotations at the slice's end
}

// watchRotations samples the wals' rotation counters every interval
// until ctx ends.
func watchRotations(ctx context.Context, wals map[uint32]*wal.Log, ids []uint32, every time.Duration) *rotationLog {
	r := &rotationLog{every: every, ids: ids}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		row := make([]int64, len(ids))
		for i, id := range ids {
			if w := wals[id]; w != nil {
				row[i] = w.Stats().Rotations
			}
		}
		r.rows = append(r.rows, row)
		select {
		case <-ctx.Done():
			return r
		case <-t.C:
		}
	}
}

// printTimeline writes one line per slice.
func printTimeline(w io.Writer, samples []sample, every time.Duration, rot *rotationLog) {
	if every <= 0 || len(samples) == 0 {
		return
	}
	n := int(slices.MaxFunc(samples, func(a, b sample) int { return int(a.end - b.end) }).end/every) + 1
	buckets := make([][]time.Duration, n)
	for _, s := range samples {
		i := int(s.end / every)
		buckets[i] = append(buckets[i], s.lat)
	}
	for i, lats := range buckets {
		var rots []string
		if rot != nil && i+1 < len(rot.rows) {
			for j, id := range rot.ids {
				if d := rot.rows[i+1][j] - rot.rows[i][j]; d > 0 {
					rots = append(rots, fmt.Sprintf("n%d", id))
				}
			}
		}
		if len(lats) == 0 {
			fmt.Fprintf(w, "timeline t=%6.2fs commits_per_s=0 rotations=%s\n", (time.Duration(i) * every).Seconds(), strings.Join(rots, ","))
			continue
		}
		slices.Sort(lats)
		q := func(p float64) float64 { return float64(lats[int(p*float64(len(lats)-1))]) / 1e6 }
		fmt.Fprintf(w, "timeline t=%6.2fs commits_per_s=%6.0f p50_ms=%6.2f p99_ms=%7.2f max_ms=%7.2f rotations=%s\n",
			(time.Duration(i) * every).Seconds(), float64(len(lats))/every.Seconds(), q(.5), q(.99), q(1), strings.Join(rots, ","))
	}
}
