package checker

import (
	"testing"

	"phxgo/jepsen/history"
)

func setHistory(final []int64) []history.Op {
	const A = history.FAdd
	var b hb
	b.op(0, A, 0, 0, 1, ok, v(1), nil).
		op(1, A, 0, 0, 1, ok, v(2), nil).
		op(2, A, 0, 0, 1, info, v(3), nil).
		op(3, A, 0, 0, 1, info, v(4), nil).
		op(4, A, 0, 0, 1, fail, v(5), nil).
		op(0, R, 0, 2, 3, ok, nil, v(1)) // a non-final read may be partial
	b.add(history.Op{Process: 0, F: R, Invoke: 10, Complete: 11, Outcome: ok, Final: true, Result: final})
	return b.ops
}

func TestSet(t *testing.T) {
	wantValidity(t, Set(setHistory(v(1, 2, 3))), Valid) // info 3 present, info 4 absent: both fine
	wantValidity(t, Set(setHistory(v(2, 1, 4, 3))), Valid)
	wantKind(t, Set(setHistory(v(1, 3))), "lost")
	wantKind(t, Set(setHistory(v(1, 2, 2))), "duplicate")
	wantKind(t, Set(setHistory(v(1, 2, 99))), "unexpected")
	wantKind(t, Set(setHistory(v(1, 2, 5))), "failed-present")

	var noFinal hb
	noFinal.op(0, history.FAdd, 0, 0, 1, ok, v(1), nil)
	wantValidity(t, Set(noFinal.ops), Unknown)
}
