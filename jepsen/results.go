package jepsen

import (
	"encoding/json"
	"fmt"
	"os"

	"phxgo/jepsen/checker"
	"phxgo/jepsen/history"
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
