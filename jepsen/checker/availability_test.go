package checker

import (
	"testing"

	"phxgo/jepsen/history"
)

func TestAvailability(t *testing.T) {
	ms := int64(1e6)
	var b hb
	b.add(history.Op{Process: history.NemesisProcess, F: history.FNemesis, Note: "kill n1", Invoke: 100 * ms, Complete: 200 * ms, Outcome: ok})
	b.op(0, W, 1, 0, 10*ms, ok, v(1), nil).
		op(0, W, 1, 110*ms, 150*ms, info, v(2), nil).
		op(1, W, 1, 120*ms, 130*ms, ok, v(3), nil).
		op(0, W, 1, 210*ms, 450*ms, ok, v(4), nil).
		add(history.Op{Process: 2, F: history.FCAS, Key: 1, Invoke: 140 * ms, Complete: 145 * ms, Outcome: history.Fail, Error: "cas mismatch", Arg: v(1, 2), Result: v(0)}).
		add(history.Op{Process: 3, F: history.FCAS, Key: 1, Invoke: 160 * ms, Complete: 165 * ms, Outcome: history.Fail, Error: "dial: refused", Arg: v(1, 2)})
	r := Availability(b.ops)
	wantValidity(t, r, Valid)
	ws := r.Info["windows"].([]Window)
	// Served: the ok write and the CAS that ran but matched nothing; not
	// the info write nor the refused CAS.
	if len(ws) != 1 || ws[0].Ops != 4 || ws[0].OK != 2 || ws[0].Avail != 0.5 {
		t.Fatalf("windows = %+v", ws)
	}
	if ws[0].RecoverySeconds != 0.25 {
		t.Fatalf("recovery = %v, want 0.25", ws[0].RecoverySeconds)
	}
	// Served completions in [100, 450] ms: 130, 145, 450: longest gap 305 ms.
	if ws[0].OutageSeconds != 0.305 {
		t.Fatalf("outage = %v, want 0.305", ws[0].OutageSeconds)
	}
}

func TestCombine(t *testing.T) {
	if Combine(Valid, Unknown, Valid) != Unknown || Combine(Unknown, Invalid) != Invalid || Combine() != Valid {
		t.Fatal("Combine")
	}
}
