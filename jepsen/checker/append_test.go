package checker

import (
	"testing"

	"phxgo/jepsen/history"
)

func app(k, x int64) history.Micro         { return history.Micro{F: history.MAppend, Key: k, Value: x} }
func rd(k int64, l ...int64) history.Micro { return history.Micro{F: history.MRead, Key: k, List: l} }

func (b *hb) txn(p int, t0, t1 int64, out history.Outcome, ms ...history.Micro) *hb {
	return b.add(history.Op{Process: p, F: history.FTxn, Invoke: t0, Complete: t1, Outcome: out, Txn: ms})
}

func baseAppend() *hb {
	var b hb
	b.txn(0, 0, 1, ok, app(1, 1)).
		txn(1, 0, 2, ok, app(1, 2), rd(1, 1, 2)). // reads its own append last
		txn(2, 3, 4, info, app(1, 3)).            // unknown
		txn(3, 3, 4, fail, app(1, 4)).            // definitely not
		txn(0, 5, 6, ok, rd(1, 1, 2), app(2, 1)).
		txn(1, 7, 8, info, app(2, 2), rd(2)) // info reads are ignored
	return &b
}

func TestAppendValid(t *testing.T) {
	b := baseAppend()
	b.txn(0, 9, 10, ok, rd(1, 1, 2, 3), rd(2, 1))
	wantValidity(t, Append(b.ops), Valid)
}

func TestAppendLost(t *testing.T) {
	b := baseAppend()
	b.txn(0, 9, 10, ok, rd(1, 1, 3)) // 2 acknowledged at t=2, gone
	wantKind(t, Append(b.ops), "incompatible-order")
	b2 := baseAppend()
	b2.txn(0, 9, 10, ok, rd(2)) // append of 1 to key 2 acknowledged at t=6
	wantKind(t, Append(b2.ops), "lost-append")
}

func TestAppendReordered(t *testing.T) {
	b := baseAppend()
	b.txn(0, 9, 10, ok, rd(1, 2, 1))
	wantKind(t, Append(b.ops), "incompatible-order")
}

func TestAppendRealtimeOrder(t *testing.T) {
	var b hb
	b.txn(0, 0, 1, ok, app(1, 1)).
		txn(1, 2, 3, ok, app(1, 2)).
		txn(0, 4, 5, ok, rd(1, 2, 1)) // 1 completed before 2 began, yet is after it
	wantKind(t, Append(b.ops), "realtime-order")
}

func TestAppendDuplicateGarbageAborted(t *testing.T) {
	b := baseAppend()
	b.txn(0, 9, 10, ok, rd(1, 1, 2, 2))
	wantKind(t, Append(b.ops), "duplicate-append")
	b = baseAppend()
	b.txn(0, 9, 10, ok, rd(1, 1, 2, 77))
	wantKind(t, Append(b.ops), "garbage")
	b = baseAppend()
	b.txn(0, 9, 10, ok, rd(1, 1, 2, 4))
	wantKind(t, Append(b.ops), "G1a")
}

func TestAppendStaleRead(t *testing.T) {
	var b hb
	b.txn(0, 0, 1, info, app(1, 1)).
		txn(1, 2, 3, ok, rd(1, 1)).
		txn(2, 4, 5, ok, rd(1)) // went back in time
	wantKind(t, Append(b.ops), "stale-read")
}

func TestAppendInternal(t *testing.T) {
	var b hb
	b.txn(0, 0, 1, ok, app(1, 1), rd(1))
	wantKind(t, Append(b.ops), "internal")
}
