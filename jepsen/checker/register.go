package checker

import (
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/anishathalye/porcupine"

	"phxgo/jepsen/history"
)

// RegisterOptions tune the linearizability check.
type RegisterOptions struct {
	// Timeout bounds porcupine; when it expires the result is Unknown.
	// Zero means 30s.
	Timeout time.Duration
	// HTMLPath, if set, receives porcupine's visualization.
	HTMLPath string
}

// absent is the register state of a key with no row.
const absent int64 = -1

type regInput struct {
	F       string
	Key     int64
	A, B    int64 // write: A; cas: A -> B
	Unknown bool  // the op's outcome is info
}

type regOutput struct {
	Value int64 // read result, absent when no row
	OK    bool  // cas: true if applied (ok), false if fail
}

// registerModel is a read/write/CAS register per key; state is int64.
var registerModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[int64][]porcupine.Operation{}
		var keys []int64
		for _, op := range h {
			k := op.Input.(regInput).Key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() any { return absent },
	Step: func(state, input, output any) (bool, any) {
		s := state.(int64)
		in := input.(regInput)
		out := output.(regOutput)
		switch in.F {
		case history.FRead:
			return out.Value == s, s
		case history.FWrite:
			return true, in.A
		case history.FCAS:
			if in.Unknown {
				// Linearized here it applies iff the value matches; "never
				// happened" is covered by linearizing it last.
				if s == in.A {
					return true, in.B
				}
				return true, s
			}
			if out.OK {
				return s == in.A, in.B
			}
			return s != in.A, s
		}
		return false, s
	},
	DescribeOperation: func(input, output any) string {
		in := input.(regInput)
		out := output.(regOutput)
		unk := ""
		if in.Unknown {
			unk = " ?"
		}
		switch in.F {
		case history.FRead:
			return fmt.Sprintf("k%d read -> %s", in.Key, describeValue(out.Value))
		case history.FWrite:
			return fmt.Sprintf("k%d write %d%s", in.Key, in.A, unk)
		default:
			if in.Unknown {
				return fmt.Sprintf("k%d cas %d->%d ?", in.Key, in.A, in.B)
			}
			return fmt.Sprintf("k%d cas %d->%d %v", in.Key, in.A, in.B, out.OK)
		}
	},
	DescribeState: func(state any) string { return describeValue(state.(int64)) },
}

func describeValue(v int64) string {
	if v == absent {
		return "nil"
	}
	return strconv.FormatInt(v, 10)
}

// registerOps converts the history to porcupine operations. Info reads and
// failed reads/writes are dropped; info writes and CASes get a return time
// after every other operation (they may take effect any time after invoke).
func registerOps(h []history.Op) ([]porcupine.Operation, error) {
	var end int64
	for _, op := range h {
		if op.Complete > end {
			end = op.Complete
		}
	}
	end++
	// Dense client ids for the visualization (processes are renumbered
	// after every info op, so they can be sparse).
	dense := map[int]int{}
	var out []porcupine.Operation
	for _, op := range clientOps(h) {
		in := regInput{F: op.F, Key: op.Key}
		var o regOutput
		ret := op.Complete
		switch op.F {
		case history.FRead:
			if op.Outcome != history.OK {
				continue
			}
			o.Value = absent
			if len(op.Result) > 0 {
				o.Value = op.Result[0]
			}
		case history.FWrite:
			if op.Outcome == history.Fail {
				continue
			}
			a, err := arg(op, 0)
			if err != nil {
				return nil, err
			}
			in.A = a
		case history.FCAS:
			// A failed CAS constrains the state only if it ran and matched
			// nothing (Result [0] = matched rows); any other failure means it
			// never ran and is dropped, as Knossos drops :fail ops.
			if op.Outcome == history.Fail && !(len(op.Result) == 1 && op.Result[0] == 0) {
				continue
			}
			a, err := arg(op, 0)
			if err != nil {
				return nil, err
			}
			b, err := arg(op, 1)
			if err != nil {
				return nil, err
			}
			in.A, in.B = a, b
			o.OK = op.Outcome == history.OK
		default:
			return nil, fmt.Errorf("op %d: %w: %q in a register history", op.Index, ErrUnknownOp, op.F)
		}
		if op.Outcome == history.Info {
			in.Unknown = true
			ret = end
		}
		if _, ok := dense[op.Process]; !ok {
			dense[op.Process] = len(dense)
		}
		out = append(out, porcupine.Operation{
			ClientId: dense[op.Process], Input: in, Call: op.Invoke, Output: o, Return: ret, Metadata: op.Index,
		})
	}
	return out, nil
}

// Register checks that the register history is linearizable, per key.
func Register(h []history.Op, opts RegisterOptions) Result {
	res := Result{Checker: "linearizable-register", Valid: Valid}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	ops, err := registerOps(h)
	if err != nil {
		res.Valid = Unknown
		res.setInfo("error", err.Error())
		return res
	}
	res.setInfo("checked-ops", len(ops))
	start := time.Now()
	verdict, info := porcupine.CheckOperationsVerbose(registerModel, ops, opts.Timeout)
	res.setInfo("check-duration", time.Since(start).String())
	switch verdict {
	case porcupine.Ok:
	case porcupine.Illegal:
		res.add(Anomaly{Kind: "nonlinearizable", Detail: "no linearization of some key's history; see the HTML visualization"})
		res.Anomalies[len(res.Anomalies)-1].Detail += illegalKeys(ops)
	default:
		res.Valid = Unknown
		res.setInfo("error", fmt.Sprintf("porcupine timed out after %s", opts.Timeout))
	}
	if opts.HTMLPath != "" && verdict != porcupine.Unknown {
		if err := porcupine.VisualizePath(registerModel, info, opts.HTMLPath); err != nil {
			res.setInfo("html-error", err.Error())
		} else {
			res.setInfo("html", opts.HTMLPath)
		}
	}
	return res
}

// illegalKeys names the keys whose own history is not linearizable (each is
// small after partitioning, so a per-key recheck is cheap).
func illegalKeys(ops []porcupine.Operation) string {
	parts := registerModel.Partition(ops)
	var bad []int64
	for _, p := range parts {
		if porcupine.CheckOperationsTimeout(registerModel, p, 5*time.Second) == porcupine.Illegal {
			bad = append(bad, p[0].Input.(regInput).Key)
		}
	}
	if len(bad) == 0 {
		return ""
	}
	return fmt.Sprintf(" (keys %v)", bad)
}
