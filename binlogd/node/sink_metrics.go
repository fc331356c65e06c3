package node

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"phxgo/paxos"
)

// stageObserver registers one histogram per stage of the leader's commit
// path (paxos.Stage: phxgo_paxos_queue_seconds, _accept_round_seconds,
// _chosen_to_applied_seconds) and returns the paxos.WithStageObserver
// callback that fills them. With phxgo_paxos_commit_latency_seconds and
// capture's counters they split a commit's time in the log (issue 19).
func stageObserver(reg *prometheus.Registry) func(paxos.Stage, time.Duration) {
	help := [...]string{
		paxos.StageQueue:           "a binlog batch's or lease request's submission to the leader proposing the value carrying it (batching, linger, window), per command",
		paxos.StageAcceptRound:     "a value proposed to a quorum of votes counted (followers' syncs and the round trip), per value",
		paxos.StageChosenToApplied: "a value's quorum counted to its application here (the leader's own save, the pipeline's order, the applier), per value",
	}
	var hs [len(help)]prometheus.Histogram
	for s := range hs {
		hs[s] = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "phxgo", Subsystem: "paxos",
			Name: paxos.Stage(s).String() + "_seconds", Help: help[s],
			Buckets: prometheus.ExponentialBuckets(0.0000625, 2, 16)}) // 62.5 µs .. 2 s
		reg.MustRegister(hs[s])
	}
	return func(s paxos.Stage, d time.Duration) {
		if int(s) < len(hs) {
			hs[s].Observe(d.Seconds())
		}
	}
}
