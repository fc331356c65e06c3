package checker

import (
	"fmt"
	"time"

	"phxgo/jepsen/history"
)

// Latency checks that no client operation waited longer than bound while
// no fault was in place: an operation's wait is the part of its
// [invoke, complete] outside every fault window. A COMMIT blocked by a
// fault may take as long as the fault lasts (the nemesis decides that),
// but once the fault is healed the cluster owes an answer (a result or
// an error) within bound; an operation cut off by the client's own
// timeout (-op-timeout, which must exceed bound) therefore shows as
// "unbounded-wait". Final reads are excluded (taken after the run).
//
// Info: "bound-s", "max-wait-s" (the largest wait outside faults) and
// "max-latency-s" (the largest invoke-to-complete time, faults included).
func Latency(h []history.Op, bound time.Duration) Result {
	res := Result{Checker: "latency", Valid: Valid}
	var faults []history.Op
	for _, op := range h {
		if !op.IsClient() {
			faults = append(faults, op)
		}
	}
	var maxWait, maxLat int64
	for _, op := range clientOps(h) {
		if op.Final {
			continue
		}
		lat := op.Complete - op.Invoke
		wait := lat - overlap(op.Invoke, op.Complete, faults)
		maxWait, maxLat = max(maxWait, wait), max(maxLat, lat)
		if wait > int64(bound) {
			res.add(Anomaly{Kind: "unbounded-wait", Ops: []int{op.Index},
				Detail: fmt.Sprintf("%s took %.1fs, %.1fs of it with no fault in place (bound %s): %s",
					op.F, secs(lat), secs(wait), bound, op.Error)})
		}
	}
	res.setInfo("bound-s", bound.Seconds())
	res.setInfo("max-wait-s", secs(maxWait))
	res.setInfo("max-latency-s", secs(maxLat))
	return res
}

// overlap is the length of [a, b] covered by the union of the windows.
func overlap(a, b int64, windows []history.Op) int64 {
	var covered int64
	cur := a // windows are recorded in heal order, not start order: merge
	for {
		next := int64(-1)
		for _, w := range windows {
			if w.Invoke <= cur && w.Complete > cur {
				next = max(next, min(w.Complete, b))
			}
		}
		if next > cur {
			covered += next - cur
			cur = next
			continue
		}
		// Jump to the next window start after cur.
		start := int64(-1)
		for _, w := range windows {
			if w.Invoke > cur && w.Invoke < b && (start < 0 || w.Invoke < start) {
				start = w.Invoke
			}
		}
		if start < 0 {
			return covered
		}
		cur = start
	}
}
