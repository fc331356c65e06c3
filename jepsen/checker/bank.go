package checker

import (
	"fmt"

	"phxgo/jepsen/history"
)

// Bank checks the bank invariant: every ok read returns exactly accounts
// balances, none negative, summing to total. Transfers themselves are not
// checked (their effect shows only through reads); a history with no ok
// read is Unknown.
func Bank(h []history.Op, accounts int, total int64) Result {
	res := Result{Checker: "bank", Valid: Valid}
	reads := 0
	for _, op := range clientOps(h) {
		if op.F != history.FRead || op.Outcome != history.OK {
			continue
		}
		reads++
		if len(op.Result) != accounts {
			res.add(Anomaly{Kind: "wrong-account-count", Ops: []int{op.Index},
				Detail: fmt.Sprintf("read saw %d accounts, want %d: %v", len(op.Result), accounts, op.Result)})
			continue
		}
		var sum int64
		for i, b := range op.Result {
			sum += b
			if b < 0 {
				res.add(Anomaly{Kind: "negative-balance", Key: int64(i), Ops: []int{op.Index},
					Detail: fmt.Sprintf("account %d has %d: %v", i, b, op.Result)})
			}
		}
		if sum != total {
			res.add(Anomaly{Kind: "wrong-total", Ops: []int{op.Index},
				Detail: fmt.Sprintf("read total %d, want %d: %v", sum, total, op.Result)})
		}
	}
	res.setInfo("reads", reads)
	if reads == 0 && res.Valid == Valid {
		res.Valid = Unknown
		res.setInfo("error", "no ok read")
	}
	return res
}
