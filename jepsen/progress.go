package jepsen

import (
	"context"
	"log/slog"
	"time"

	"phxgo/jepsen/history"
)

// progressEvery is how often a run logs its progress; runs shorter than
// two of these log nothing extra.
const progressEvery = 30 * time.Second

// progress logs, every progressEvery until ctx ends, how far the
// workload phase is and what the clients got so far, so a long run shows
// it is alive and whether the cluster is serving.
func progress(ctx context.Context, rec *history.Recorder, total time.Duration) {
	if total < 2*progressEvery {
		return
	}
	start := time.Now()
	t := time.NewTicker(progressEvery)
	defer t.Stop()
	seen, ok, fail, info, faults := 0, 0, 0, 0, 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ops := rec.Ops()
		for _, op := range ops[seen:] {
			switch {
			case !op.IsClient():
				faults++
			case op.Outcome == history.OK:
				ok++
			case op.Outcome == history.Fail:
				fail++
			default:
				info++
			}
		}
		seen = len(ops)
		el := time.Since(start).Round(time.Second)
		slog.Info("jepsen: progress", "elapsed", el, "of", total, "ok", ok, "fail", fail, "info", info, "faults_healed", faults)
	}
}
