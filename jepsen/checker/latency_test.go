package checker

import (
	"testing"
	"time"

	"phxgo/jepsen/history"
)

func TestLatencyCountsOnlyWaitOutsideFaults(t *testing.T) {
	s := int64(time.Second)
	var b hb
	b.add(history.Op{Process: history.NemesisProcess, F: history.FNemesis, Invoke: 10 * s, Complete: 30 * s, Note: "kill -9 binlogd"})
	// Blocked for the whole fault, answered 1 s after its heal: fine.
	b.txn(0, 9*s, 31*s, info, app(1, 1))
	b.txn(1, 40*s, 41*s, ok, rd(1))
	r := Latency(b.ops, 5*time.Second)
	wantValidity(t, r, Valid)
	if r.Info["max-wait-s"] != 2.0 || r.Info["max-latency-s"] != 22.0 {
		t.Fatalf("info %v", r.Info)
	}
	// Still waiting 20 s after the heal (the client's timeout ended it).
	b.txn(2, 25*s, 50*s, info, app(1, 2))
	wantKind(t, Latency(b.ops, 5*time.Second), "unbounded-wait")
}

func TestOverlapMergesWindows(t *testing.T) {
	w := []history.Op{{Invoke: 5, Complete: 20}, {Invoke: 0, Complete: 10}, {Invoke: 30, Complete: 40}}
	if got := overlap(2, 35, w); got != 18+5 {
		t.Fatalf("overlap = %d, want 23", got)
	}
	if got := overlap(21, 29, w); got != 0 {
		t.Fatalf("overlap = %d, want 0", got)
	}
}
