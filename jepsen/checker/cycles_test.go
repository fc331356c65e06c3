package checker

import (
	"math/rand/v2"
	"strings"
	"testing"

	"phxgo/jepsen/history"
)

// Known-bad histories, one per cycle anomaly: every per-key check passes
// (the transactions overlap in time, the lists agree), only the
// dependency graph shows the anomaly.

func wantOnly(t *testing.T, r Result, kind string) Anomaly {
	t.Helper()
	wantKind(t, r, kind)
	var found Anomaly
	for _, a := range r.Anomalies {
		if a.Kind != kind {
			t.Fatalf("%s: unexpected %q anomaly besides %s: %+v", r.Checker, a.Kind, kind, a)
		}
		found = a
	}
	return found
}

func TestAppendG0WriteCycle(t *testing.T) {
	var b hb
	b.txn(0, 0, 10, ok, app(1, 1), app(2, 3)).
		txn(1, 0, 10, ok, app(1, 2), app(2, 4)).
		txn(2, 20, 21, ok, rd(1, 1, 2), rd(2, 4, 3)) // T0 before T1 on key 1, after it on key 2
	a := wantOnly(t, Append(b.ops), "G0")
	if len(a.Ops) != 2 || !strings.Contains(a.Detail, "-ww->") {
		t.Fatalf("cycle %+v", a)
	}
}

func TestAppendG1cCircularInformationFlow(t *testing.T) {
	var b hb // each sees the other's append
	b.txn(0, 0, 10, ok, app(1, 1), rd(2, 2)).
		txn(1, 0, 10, ok, app(2, 2), rd(1, 1)).
		txn(2, 20, 21, ok, rd(1, 1), rd(2, 2))
	wantOnly(t, Append(b.ops), "G1c")

	var c hb // ww one way, wr the other
	c.txn(0, 0, 10, ok, app(1, 1), rd(2, 3)).
		txn(1, 0, 10, ok, app(1, 2), app(2, 3)).
		txn(2, 20, 21, ok, rd(1, 1, 2), rd(2, 3))
	a := wantOnly(t, Append(c.ops), "G1c")
	if !strings.Contains(a.Detail, "-ww->") || !strings.Contains(a.Detail, "-wr->") {
		t.Fatalf("cycle %+v", a)
	}
}

func TestAppendG2ItemWriteSkew(t *testing.T) {
	var b hb // each misses what the other appends
	b.txn(0, 0, 10, ok, rd(1), app(2, 2)).
		txn(1, 0, 10, ok, rd(2), app(1, 1)).
		txn(2, 20, 21, ok, rd(1, 1), rd(2, 2))
	a := wantOnly(t, Append(b.ops), "G2-item")
	if strings.Contains(a.Detail, "G-single") {
		t.Fatalf("two rw edges reported as G-single: %+v", a)
	}
}

func TestAppendGSingleReadSkew(t *testing.T) {
	var b hb // T0 misses T1's 1 yet sees its 2
	b.txn(0, 0, 10, ok, rd(1), rd(2, 2)).
		txn(1, 0, 10, ok, app(1, 1), app(2, 2)).
		txn(2, 20, 21, ok, rd(1, 1), rd(2, 2))
	a := wantOnly(t, Append(b.ops), "G2-item")
	if !strings.Contains(a.Detail, "G-single") {
		t.Fatalf("one rw edge not called G-single: %+v", a)
	}
}

func TestAppendG1bIntermediateRead(t *testing.T) {
	var b hb
	b.txn(0, 0, 10, ok, app(1, 1), app(1, 2)).
		txn(1, 0, 10, ok, rd(1, 1)). // saw T0 half done
		txn(2, 20, 21, ok, rd(1, 1, 2))
	// T1 also missed T0's 2 after reading T0's 1: a G-single cycle too.
	wantKind(t, Append(b.ops), "G1b")
}

func TestAppendInfoWriterTakesPartInCycles(t *testing.T) {
	// An info transaction whose append was read did commit: its edges count.
	var b hb
	b.txn(0, 0, 10, info, app(1, 1), app(2, 2)).
		txn(1, 0, 10, ok, rd(1), rd(2, 2)).
		txn(2, 20, 21, ok, rd(1, 1), rd(2, 2))
	wantOnly(t, Append(b.ops), "G2-item")
}

// serialHistory executes random transactions one after another on an
// in-memory store, then widens each one's window so that neighbours
// overlap (a serialization point stays inside each window, so the
// history is strict serializable). Some appends end info (committed or
// not, chosen at random) or fail (not applied).
func serialHistory(seed uint64, n, keys int) []history.Op {
	rng := rand.New(rand.NewPCG(seed, 1))
	store := map[int64][]int64{}
	var b hb
	next := int64(1)
	for i := 0; i < n; i++ {
		out := ok
		switch rng.IntN(10) {
		case 0:
			out = info
		case 1:
			out = fail
		}
		apply := out == ok || (out == info && rng.IntN(2) == 0)
		var ms []history.Micro
		staged := map[int64][]int64{}
		for j := 0; j < 1+rng.IntN(4); j++ {
			k := rng.Int64N(int64(keys))
			if rng.IntN(2) == 0 {
				ms = append(ms, app(k, next))
				staged[k] = append(staged[k], next)
				next++
			} else {
				l := append(append([]int64{}, store[k]...), staged[k]...)
				if out != ok {
					l = nil // only ok txns report what they read
				}
				ms = append(ms, history.Micro{F: history.MRead, Key: k, List: l})
			}
		}
		if apply {
			for k, vs := range staged {
				store[k] = append(store[k], vs...)
			}
		}
		point := int64(100 * i)
		b.txn(i%7, point-rng.Int64N(150), point+1+rng.Int64N(150), out, ms...)
	}
	var fin []history.Micro
	for k := int64(0); k < int64(keys); k++ {
		fin = append(fin, history.Micro{F: history.MRead, Key: k, List: append([]int64{}, store[k]...)})
	}
	b.txn(99, int64(100*n)+200, int64(100*n)+201, ok, fin...)
	return b.ops
}

func TestAppendSerialHistoriesAreValid(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		r := Append(serialHistory(seed, 300, 4))
		if r.Valid != Valid {
			t.Fatalf("seed %d: %s anomalies %+v", seed, r.Valid, r.Anomalies)
		}
		if r.Info["graph-edges"].(int) == 0 || r.Info["cyclic-components"].(int) != 0 {
			t.Fatalf("seed %d: info %v", seed, r.Info)
		}
	}
}

func TestAppendReplicaReads(t *testing.T) {
	replica := func(b *hb, t0, t1 int64, ms ...history.Micro) {
		b.txn(5, t0, t1, ok, ms...)
		b.ops[len(b.ops)-1].Note = ReplicaRead
	}
	base := func() *hb {
		var b hb
		b.txn(0, 0, 1, ok, app(1, 1), app(2, 2)).
			txn(1, 2, 3, ok, app(1, 3)).
			txn(2, 4, 5, ok, rd(1, 1, 3), rd(2, 2))
		return &b
	}
	// Stale (behind a read that completed before it began) but a
	// consistent prefix: allowed on the read/write-split port, counted.
	b := base()
	replica(b, 6, 7, rd(1, 1), rd(2, 2))
	r := Append(b.ops)
	wantValidity(t, r, Valid)
	if r.Info["replica-reads"] != 2 || r.Info["replica-stale-reads"] != 1 {
		t.Fatalf("info %v", r.Info)
	}
	// The same read on the linearizable port is a stale read.
	b = base()
	b.txn(5, 6, 7, ok, rd(1, 1), rd(2, 2))
	wantKind(t, Append(b.ops), "stale-read")
	// A replica's snapshot that is no prefix of the log (it saw T1's 3
	// but not T0's 2): read skew, G-single.
	b = base()
	replica(b, 6, 7, rd(1, 1, 3), rd(2))
	wantKind(t, Append(b.ops), "G2-item")
	// Garbage and forks are never allowed.
	b = base()
	replica(b, 6, 7, rd(1, 1, 9))
	wantKind(t, Append(b.ops), "garbage")
	b = base()
	replica(b, 6, 7, rd(1, 3, 1))
	wantKind(t, Append(b.ops), "incompatible-order")
}
