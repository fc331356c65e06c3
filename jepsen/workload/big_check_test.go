package workload

import (
	"testing"

	"phxgo/jepsen/checker"
	"phxgo/jepsen/history"
)

func bigAdd(i int, batch int64, out history.Outcome) history.Op {
	return history.Op{Index: i, Process: 1, F: history.FAdd, Key: batch, Arg: []int64{batch, bigTxn, 4, 10}, Outcome: out}
}

func bigRead(i int, final bool, triples ...int64) history.Op {
	return history.Op{Index: i, Process: 2, F: history.FRead, Result: triples, Final: final, Outcome: history.OK}
}

// TestCheckBig: known-good and known-bad histories of the big workload.
func TestCheckBig(t *testing.T) {
	for _, c := range []struct {
		name string
		h    []history.Op
		want checker.Validity
		kind string
	}{
		{"whole, unknown absent", []history.Op{bigAdd(0, 1, history.OK), bigAdd(1, 2, history.Info), bigAdd(2, 3, history.Fail),
			bigRead(3, true, 1, 4, 40)}, checker.Valid, ""},
		{"unknown present whole", []history.Op{bigAdd(0, 1, history.Info), bigRead(1, true, 1, 4, 40)}, checker.Valid, ""},
		{"lost", []history.Op{bigAdd(0, 1, history.OK), bigRead(1, true)}, checker.Invalid, "lost"},
		{"part of a transaction", []history.Op{bigAdd(0, 1, history.Info), bigRead(1, true, 1, 3, 30)}, checker.Invalid, "partial"},
		{"applied twice", []history.Op{bigAdd(0, 1, history.OK), bigRead(1, true, 1, 8, 80)}, checker.Invalid, "partial"},
		{"partial in a read during the run", []history.Op{bigAdd(0, 1, history.OK), bigRead(1, false, 1, 2, 20), bigRead(2, true, 1, 4, 40)},
			checker.Invalid, "partial"},
		{"failed yet visible", []history.Op{bigAdd(0, 1, history.Fail), bigRead(1, true, 1, 4, 40)}, checker.Invalid, "failed-visible"},
		{"never written", []history.Op{bigRead(0, true, 9, 1, 1)}, checker.Invalid, "unexpected"},
		{"no final read", []history.Op{bigAdd(0, 1, history.OK)}, checker.Unknown, ""},
	} {
		r := CheckBig(c.h)
		if r.Valid != c.want {
			t.Errorf("%s: %s, want %s (%+v)", c.name, r.Valid, c.want, r.Anomalies)
			continue
		}
		if c.kind != "" && (len(r.Anomalies) == 0 || r.Anomalies[0].Kind != c.kind) {
			t.Errorf("%s: anomalies %+v, want %s", c.name, r.Anomalies, c.kind)
		}
	}
}
