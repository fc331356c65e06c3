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
		op(0, W, 1, 210*ms, 450*ms, ok, v(4), nil)
	r := Availability(b.ops)
	wantValidity(t, r, Valid)
	ws := r.Info["windows"].([]Window)
	if len(ws) != 1 || ws[0].Ops != 2 || ws[0].OK != 1 || ws[0].Avail != 0.5 {
		t.Fatalf("windows = %+v", ws)
	}
	if ws[0].RecoverySeconds != 0.25 {
		t.Fatalf("recovery = %v, want 0.25", ws[0].RecoverySeconds)
	}
}

func TestCombine(t *testing.T) {
	if Combine(Valid, Unknown, Valid) != Unknown || Combine(Unknown, Invalid) != Invalid || Combine() != Valid {
		t.Fatal("Combine")
	}
}
