package checker

import (
	"time"

	"phxgo/jepsen/history"
)

// Window is the availability of one fault window.
type Window struct {
	Fault string  `json:"fault"`
	Start float64 `json:"start_s"` // seconds since the run began
	Heal  float64 `json:"heal_s"`
	Ops   int     `json:"ops"`   // client ops invoked inside the window
	OK    int     `json:"ok"`    // of which ok
	Avail float64 `json:"avail"` // OK/Ops (1 when Ops is 0)
	// RecoverySeconds is the time from heal to the completion of the first
	// ok operation invoked after it; -1 if none came.
	RecoverySeconds float64 `json:"recovery_s"`
}

// Availability measures, for every fault window in h, the share of ok
// client operations invoked during it and the recovery time after its heal.
// It is informational: its Valid is always Valid.
func Availability(h []history.Op) Result {
	res := Result{Checker: "availability", Valid: Valid}
	clients := clientOps(h)
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
			if op.Invoke >= f.Invoke && op.Invoke <= f.Complete {
				w.Ops++
				if op.Outcome == history.OK {
					w.OK++
				}
			}
			if op.Outcome == history.OK && op.Invoke >= f.Complete && (first < 0 || op.Complete < first) {
				first = op.Complete
			}
		}
		w.Avail = 1
		if w.Ops > 0 {
			w.Avail = float64(w.OK) / float64(w.Ops)
		}
		if first >= 0 {
			w.RecoverySeconds = secs(first - f.Complete)
		}
		windows = append(windows, w)
	}
	var quiet, quietOK int
	for _, op := range clients {
		if op.Final || inAny(op.Invoke) {
			continue
		}
		quiet++
		if op.Outcome == history.OK {
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

func secs(ns int64) float64 {
	return float64(time.Duration(ns).Milliseconds()) / 1000
}
