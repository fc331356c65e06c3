package localcluster

import "strings"

// binlogdProcs is the GOMAXPROCS a local cluster's binlogds run with.
// Three binlogds, three MariaDBs and the clients share one host, and
// binlogd's work is a few short hand-offs per Paxos value: with one P a
// goroutine hand-off stays on its thread, while with more Ps the runtime
// wakes idle threads (futex, spinning) for each, and on a shared or
// virtualised host a thread switch costs more than the work handed over.
// Measured side by side (sysbench oltp_insert, 16 threads, 20 s, one
// 2-core host, issue 19): the three binlogds' CPU per transaction was
// 0.75-0.82 of the Go default's. Setting GOMAXPROCS in the caller's
// environment overrides it.
const binlogdProcs = "1"

// binlogdEnv is env with GOMAXPROCS=binlogdProcs unless env sets it.
func binlogdEnv(env []string) []string {
	for _, kv := range env {
		if strings.HasPrefix(kv, "GOMAXPROCS=") {
			return env
		}
	}
	return append(env[:len(env):len(env)], "GOMAXPROCS="+binlogdProcs)
}
