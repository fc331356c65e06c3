package checker

import (
	"slices"
	"time"

	"phxgo/jepsen/history"
)

// Window is the availability of one fault window.
type Window struct {
	Fault string  `json:"fault"`
	Start float64 `json:"start_s"` // seconds since the run began
	Heal  float64 `json:"heal_s"`
	Ops   int     `json:"ops"`   // client ops invoked inside the window
	OK    int     `json:"ok"`    // of which served (see Availability)
	Avail float64 `json:"avail"` // OK/Ops (1 when Ops is 0)
	// RecoverySeconds is the time from heal to the completion of the first
	// served operation invoked after it; -1 if none came.
	RecoverySeconds float64 `json:"recovery_s"`
	// OutageSeconds is the longest time, from the fault's start until the
	// first served operation after its heal, in which no operation was
	// served by any client (the failover time, for a fault on the master).
	OutageSeconds float64 `json:"outage_s"`
	// MaxLatencySeconds is the longest client operation open during the
	// window (invoked before its heal, completed after its start): how
	// long the fault kept a client waiting.
	MaxLatencySeconds float64 `json:"max_latency_s"`
}

// servedErrors are definite failures that the cluster served: the
// statement ran and answered (a CAS that matched no row, a transfer
// refused for funds). For availability they count as served.
var servedErrors = []string{"cas mismatch", "insufficient balance"}

func served(op history.Op) bool {
	return op.Outcome == history.OK || (op.Outcome == history.Fail && slices.Contains(servedErrors, op.Error))
}

// Availability measures, for every fault window in h, the share of
// served client operations invoked during it, the recovery time after its
// heal and the longest outage. It is informational: its Valid is always
// Valid.
func Availability(h []history.Op) Result {
	res := Result{Checker: "availability", Valid: Valid}
	clients := clientOps(h)
	var done []int64 // completion times of served ops, sorted
	for _, op := range clients {
		if !op.Final && served(op) {
			done = append(done, op.Complete)
		}
	}
	slices.Sort(done)
	var windows []Window
	inAny := func(t int64) bool {
		for _, op := range h {
			if !op.IsClient() && t >= op.Invoke && t <= op.Complete {
				return true
			}
		}
		return false
	}
	for _, f := range h {
		if f.IsClient() {
			continue
		}
		w := Window{Fault: f.Note, Start: secs(f.Invoke), Heal: secs(f.Complete), RecoverySeconds: -1}
		var first int64 = -1
		for _, op := range clients {
			if op.Final {
				continue
			}
			if op.Invoke <= f.Complete && op.Complete >= f.Invoke {
				w.MaxLatencySeconds = max(w.MaxLatencySeconds, secs(op.Complete-op.Invoke))
			}
			if op.Invoke >= f.Invoke && op.Invoke <= f.Complete {
				w.Ops++
				if served(op) {
					w.OK++
				}
			}
			if served(op) && op.Invoke >= f.Complete && (first < 0 || op.Complete < first) {
				first = op.Complete
			}
		}
		w.Avail = 1
		if w.Ops > 0 {
			w.Avail = float64(w.OK) / float64(w.Ops)
		}
		end := first
		if first >= 0 {
			w.RecoverySeconds = secs(first - f.Complete)
		} else if len(done) > 0 {
			end = max(done[len(done)-1], f.Complete)
		}
		w.OutageSeconds = secs(longestGap(done, f.Invoke, end))
		windows = append(windows, w)
	}
	var quiet, quietOK int
	for _, op := range clients {
		if op.Final || inAny(op.Invoke) {
			continue
		}
		quiet++
		if served(op) {
			quietOK++
		}
	}
	res.setInfo("windows", windows)
	if quiet > 0 {
		res.setInfo("quiet-avail", float64(quietOK)/float64(quiet))
	}
	res.setInfo("quiet-ops", quiet)
	return res
}

// longestGap is the longest interval inside [from, to] that contains no
// time of done (sorted).
func longestGap(done []int64, from, to int64) int64 {
	if to < from {
		return 0
	}
	i, _ := slices.BinarySearch(done, from)
	prev, gap := from, int64(0)
	for ; i < len(done) && done[i] <= to; i++ {
		gap = max(gap, done[i]-prev)
		prev = done[i]
	}
	return max(gap, to-prev)
}

func secs(ns int64) float64 {
	return float64(time.Duration(ns).Milliseconds()) / 1000
}
