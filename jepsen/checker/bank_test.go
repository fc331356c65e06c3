package checker

import (
	"testing"

	"phxgo/jepsen/history"
)

func TestBank(t *testing.T) {
	const T = history.FTransfer
	var b hb
	b.op(0, R, 0, 0, 1, ok, nil, v(10, 10, 10)).
		op(1, T, 0, 0, 2, ok, v(0, 1, 5), nil).
		op(2, T, 0, 1, 3, info, v(1, 2, 3), nil).
		op(3, T, 0, 1, 3, fail, v(2, 0, 50), nil).
		op(0, R, 0, 4, 5, ok, nil, v(5, 12, 13)).
		op(0, R, 0, 6, 7, info, nil, nil)
	wantValidity(t, Bank(b.ops, 3, 30), Valid)

	bad := b
	bad.ops = append([]history.Op(nil), b.ops...)
	bad.op(0, R, 0, 8, 9, ok, nil, v(5, 17, 13)) // money created
	wantKind(t, Bank(bad.ops, 3, 30), "wrong-total")

	neg := hb{ops: append([]history.Op(nil), b.ops...)}
	neg.op(0, R, 0, 8, 9, ok, nil, v(-1, 18, 13))
	wantKind(t, Bank(neg.ops, 3, 30), "negative-balance")

	short := hb{ops: append([]history.Op(nil), b.ops...)}
	short.op(0, R, 0, 8, 9, ok, nil, v(15, 15))
	wantKind(t, Bank(short.ops, 3, 30), "wrong-account-count")

	none := hb{}
	none.op(1, T, 0, 0, 2, ok, v(0, 1, 5), nil)
	wantValidity(t, Bank(none.ops, 3, 30), Unknown)
}
