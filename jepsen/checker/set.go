package checker

import (
	"fmt"
	"sort"

	"phxgo/jepsen/history"
)

// Set checks a set history against its last ok final read (Final reads
// are taken after every fault was healed): every ok add is present
// (else "lost"), no element appears twice ("duplicate"), every element
// was attempted ("unexpected") and none whose add failed ("failed-present").
// Info adds may be present or absent. Without an ok final read the result
// is Unknown.
func Set(h []history.Op) Result {
	res := Result{Checker: "set", Valid: Valid}
	status := map[int64]history.Outcome{} // element -> best outcome of its adds
	addOp := map[int64]int{}
	var final *history.Op
	ops := clientOps(h)
	for i := range ops {
		op := ops[i]
		switch op.F {
		case history.FAdd:
			v, err := arg(op, 0)
			if err != nil {
				res.Valid = Unknown
				res.setInfo("error", err.Error())
				return res
			}
			if prev, ok := status[v]; !ok || rank(op.Outcome) > rank(prev) {
				status[v] = op.Outcome
				addOp[v] = op.Index
			}
		case history.FRead:
			if op.Outcome == history.OK && op.Final {
				final = &ops[i]
			}
		}
	}
	if final == nil {
		res.Valid = Unknown
		res.setInfo("error", "no ok final read")
		return res
	}
	seen := map[int64]int{}
	for _, v := range final.Result {
		seen[v]++
	}
	var lost, dup, unexpected, failed, infoPresent []int64
	for v, n := range seen {
		if n > 1 {
			dup = append(dup, v)
		}
		switch st, ok := status[v]; {
		case !ok:
			unexpected = append(unexpected, v)
		case st == history.Fail:
			failed = append(failed, v)
		case st == history.Info:
			infoPresent = append(infoPresent, v)
		}
	}
	okAdds := 0
	for v, st := range status {
		if st != history.OK {
			continue
		}
		okAdds++
		if seen[v] == 0 {
			lost = append(lost, v)
		}
	}
	for _, s := range [][]int64{lost, dup, unexpected, failed} {
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	}
	for _, v := range lost {
		res.add(Anomaly{Kind: "lost", Key: v, Ops: []int{addOp[v], final.Index},
			Detail: fmt.Sprintf("acknowledged add %d missing from the final read", v)})
	}
	for _, v := range dup {
		res.add(Anomaly{Kind: "duplicate", Key: v, Ops: []int{final.Index},
			Detail: fmt.Sprintf("element %d appears %d times", v, seen[v])})
	}
	for _, v := range unexpected {
		res.add(Anomaly{Kind: "unexpected", Key: v, Ops: []int{final.Index},
			Detail: fmt.Sprintf("element %d was never added", v)})
	}
	for _, v := range failed {
		res.add(Anomaly{Kind: "failed-present", Key: v, Ops: []int{addOp[v], final.Index},
			Detail: fmt.Sprintf("element %d is present though its add failed", v)})
	}
	res.setInfo("ok-adds", okAdds)
	res.setInfo("final-size", len(final.Result))
	res.setInfo("info-adds-present", len(infoPresent))
	return res
}

// rank orders outcomes by how much they say an add happened.
func rank(o history.Outcome) int {
	switch o {
	case history.OK:
		return 2
	case history.Info:
		return 1
	}
	return 0
}
