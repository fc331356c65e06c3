package workload

import (
	"fmt"
	"sort"

	"phxgo/jepsen/checker"
	"phxgo/jepsen/history"
)

// CheckBig judges a big history: each batch is all or nothing, exactly
// once.
//
//   - partial: a read saw a batch with other rows or bytes than its add
//     wrote (part of a transaction, or a transaction applied twice:
//     twice the rows, since nothing unique stops a second apply);
//   - lost: an acknowledged add is not whole in the final read;
//   - failed-visible: an add that failed for sure (rolled back or never
//     sent) is in a read;
//   - unexpected: a read saw a batch no add wrote.
//
// An add with an unknown outcome (a COMMIT cut by a fault) may be
// present or absent, but only whole. Without an ok final read the
// result is unknown.
func CheckBig(h []history.Op) checker.Result {
	res := checker.Result{Checker: "big", Valid: checker.Valid, Info: map[string]any{}}
	bad := func(kind string, key int64, ops []int, format string, args ...any) {
		res.Valid = checker.Invalid
		res.Anomalies = append(res.Anomalies, checker.Anomaly{Kind: kind, Key: key, Detail: fmt.Sprintf(format, args...), Ops: ops})
		c, _ := res.Info["count-"+kind].(int)
		res.Info["count-"+kind] = c + 1
	}
	type add struct {
		op          history.Op
		rows, bytes int64
	}
	adds := map[int64]add{}
	var final *history.Op
	var okAdds, loads, infoAdds int
	var okBytes int64
	for i := range h {
		op := h[i]
		if !op.IsClient() {
			continue
		}
		switch op.F {
		case history.FAdd:
			if len(op.Arg) != 4 {
				res.Valid = checker.Unknown
				res.Info["error"] = fmt.Sprintf("op %d: add with %d args, want 4", op.Index, len(op.Arg))
				return res
			}
			adds[op.Arg[0]] = add{op: op, rows: op.Arg[2], bytes: op.Arg[2] * op.Arg[3]}
			switch op.Outcome {
			case history.OK:
				okAdds++
				okBytes += op.Arg[2] * op.Arg[3]
				if op.Arg[1] == bigLoad {
					loads++
				}
			case history.Info:
				infoAdds++
			}
		case history.FRead:
			if op.Outcome == history.OK && op.Final {
				final = &h[i]
			}
		}
	}
	present := func(op history.Op) (map[int64][2]int64, bool) {
		if len(op.Result)%3 != 0 {
			bad("malformed-read", 0, []int{op.Index}, "read result of %d values, want triples", len(op.Result))
			return nil, false
		}
		m := map[int64][2]int64{}
		for i := 0; i < len(op.Result); i += 3 {
			m[op.Result[i]] = [2]int64{op.Result[i+1], op.Result[i+2]}
		}
		return m, true
	}
	for _, op := range h {
		if !op.IsClient() || op.F != history.FRead || op.Outcome != history.OK {
			continue
		}
		seen, ok := present(op)
		if !ok {
			continue
		}
		for b, got := range seen {
			a, known := adds[b]
			switch {
			case !known:
				bad("unexpected", b, []int{op.Index}, "batch %d (%d rows) was never written", b, got[0])
			case a.op.Outcome == history.Fail:
				bad("failed-visible", b, []int{a.op.Index, op.Index}, "batch %d failed (%s) but a read sees %d rows", b, a.op.Error, got[0])
			case got[0] != a.rows || got[1] != a.bytes:
				bad("partial", b, []int{a.op.Index, op.Index}, "batch %d: read sees %d rows / %d bytes, its transaction wrote %d / %d",
					b, got[0], got[1], a.rows, a.bytes)
			}
		}
	}
	if final == nil {
		if res.Valid == checker.Valid {
			res.Valid = checker.Unknown
		}
		res.Info["error"] = "no ok final read"
		return res
	}
	seen, _ := present(*final)
	var lost []int64
	for b, a := range adds {
		if a.op.Outcome == history.OK {
			if _, ok := seen[b]; !ok {
				lost = append(lost, b)
			}
		}
	}
	sort.Slice(lost, func(i, j int) bool { return lost[i] < lost[j] })
	for _, b := range lost {
		bad("lost", b, []int{adds[b].op.Index, final.Index}, "batch %d was acknowledged but is not in the final read", b)
	}
	infoPresent := 0
	for b := range seen {
		if a, ok := adds[b]; ok && a.op.Outcome == history.Info {
			infoPresent++
		}
	}
	res.Info["ok-adds"], res.Info["ok-loads"], res.Info["ok-mib"] = okAdds, loads, okBytes>>20
	res.Info["info-adds"], res.Info["info-present"] = infoAdds, infoPresent
	return res
}
