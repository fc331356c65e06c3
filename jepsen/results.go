package jepsen

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"phxgo/jepsen/checker"
	"phxgo/jepsen/history"
	"phxgo/jepsen/report"
	"phxgo/jepsen/workload"
)

// fill counts the history and runs the checkers.
func (r *Results) fill(ops []history.Op, w workload.Workload, outDir string, interrupted bool) {
	for _, op := range ops {
		if !op.IsClient() {
			r.Faults++
			continue
		}
		r.Ops++
		switch op.Outcome {
		case history.OK:
			r.OK++
		case history.Fail:
			r.Fail++
		default:
			r.Info++
		}
	}
	r.Interrupted = interrupted
	r.Checks = append(w.Check(ops, outDir), checker.Availability(ops))
	if r.latencyBound > 0 {
		r.Checks = append(r.Checks, checker.Latency(ops, r.latencyBound))
	}
	vs := []checker.Validity{}
	for _, c := range r.Checks {
		vs = append(vs, c.Valid)
	}
	if r.NotRecovered != "" {
		// A cluster that does not come back once every fault is healed is
		// a failure in its own right.
		vs = append(vs, checker.Invalid)
	}
	if interrupted {
		vs = append(vs, checker.Unknown)
	}
	r.Valid = checker.Combine(vs...)
}

func (r *Results) write(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Line is the last line cmd/jepsen prints.
func (r *Results) Line() string {
	return fmt.Sprintf("valid=%s ops=%d ok=%d fail=%d info=%d workload=%s nemesis=%s",
		r.Valid, r.Ops, r.OK, r.Fail, r.Info, r.Workload, r.Nemesis)
}

// Summary is a human-readable account of the run for stderr: each
// checker's verdict and anomalies, each fault window's availability,
// outage and recovery, and the recovery after the final heal.
func (r *Results) Summary() string {
	var b strings.Builder
	for _, c := range r.Checks {
		fmt.Fprintf(&b, "check %-22s %s\n", c.Checker, c.Valid)
		for _, a := range c.Anomalies {
			fmt.Fprintf(&b, "  anomaly %+v\n", a)
		}
		if c.Checker == "latency" {
			fmt.Fprintf(&b, "  longest op %.1fs, longest wait with no fault in place %.1fs (bound %.0fs)\n",
				c.Info["max-latency-s"], c.Info["max-wait-s"], c.Info["bound-s"])
		}
		if ws, ok := c.Info["windows"].([]checker.Window); ok {
			if q, ok := c.Info["quiet-avail"].(float64); ok {
				fmt.Fprintf(&b, "  no fault: %d ops, %.0f%% served\n", c.Info["quiet-ops"], 100*q)
			}
			for _, w := range ws {
				fmt.Fprintf(&b, "  %6.1fs-%6.1fs %-45s %4d ops %3.0f%% served, outage %5.1fs, recovery %5.2fs, longest op %5.1fs\n",
					w.Start, w.Heal, w.Fault, w.Ops, 100*w.Avail, w.OutageSeconds, w.RecoverySeconds, w.MaxLatencySeconds)
			}
		}
	}
	for _, rs := range r.Reseeded {
		fmt.Fprintf(&b, "reseeded (datadir lost) %s\n", rs)
	}
	if r.NotRecovered != "" {
		fmt.Fprintf(&b, "NOT RECOVERED after the final heal: %s\n", r.NotRecovered)
	} else if !r.Interrupted {
		fmt.Fprintf(&b, "healthy %.1fs after the final heal\n", r.RecoverySeconds)
	}
	return b.String()
}

// Stats is one line of figures for tables (scripts/jepsen-matrix.sh):
// faults, the worst fault window's served share and outage, the slowest
// recovery after a fault, and the recovery after the final heal (-1: did
// not recover).
func (r *Results) Stats() string {
	minAvail, maxOutage, maxRec := 1.0, 0.0, 0.0
	for _, c := range r.Checks {
		ws, _ := c.Info["windows"].([]checker.Window)
		for _, w := range ws {
			minAvail = min(minAvail, w.Avail)
			maxOutage = max(maxOutage, w.OutageSeconds)
			maxRec = max(maxRec, w.RecoverySeconds)
		}
	}
	final := r.RecoverySeconds
	if r.NotRecovered != "" {
		final = -1
	}
	return fmt.Sprintf("stats faults=%d min_avail=%.2f max_outage_s=%.1f max_recovery_s=%.1f final_recovery_s=%.1f",
		r.Faults, minAvail, maxOutage, maxRec, final)
}

// reportRun is what the HTML report shows of r besides the history.
func (r *Results) reportRun() report.Run {
	return report.Run{
		Title:  fmt.Sprintf("%s under %s, seed %d, %d nodes", r.Workload, r.Nemesis, r.Seed, r.Nodes),
		Line:   r.Line(),
		Checks: r.Checks,
	}
}
