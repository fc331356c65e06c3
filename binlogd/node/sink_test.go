package node

import (
	"bytes"
	"testing"

	"phxgo/binlogd/binlog"
	"phxgo/masterlease"
)

// TestEntriesAreBounded: every entry the sink builds, from a run of small
// transactions or from a transaction of several MiB, encodes to at most
// entryEventBytes and its framing, so one big transaction never becomes
// one multi-MiB Paxos value (that a window of holds in memory and sends
// in one message).
func TestEntriesAreBounded(t *testing.T) {
	s := newSink(nil, nil, 1, entryEventBytes, nil, nil)
	var txns []binlog.Txn
	seq := uint64(1)
	for range 5000 { // 5000 x 700 bytes: several full batches
		txns = append(txns, binlog.Txn{GTID: binlog.GTID{Domain: 0, Server: 1, Seq: seq}, Events: bytes.Repeat([]byte{1}, 700)})
		seq++
	}
	txns = append(txns, binlog.Txn{GTID: binlog.GTID{Domain: 0, Server: 1, Seq: seq}, Events: bytes.Repeat([]byte{2}, 3<<20+12345)})
	const framing = 4 << 10 // batch and transaction headers, generously
	limit := entryEventBytes + framing
	entries := s.entries(binlog.GTID{}, txns)
	if len(entries) < 6 {
		t.Fatalf("%d entries for 6.7 MiB of events", len(entries))
	}
	for i, b := range entries {
		if n := len(masterlease.EncodeBatch(b)); n > limit {
			t.Errorf("entry %d (%d bytes of events) encodes to %d bytes, over %d", i, len(b.Events), n, limit)
		}
	}
}

// TestEntriesKeepEveryByteInOrder: the entries of any mix (a lone
// transaction, runs of small ones, one over the bound, a streamed piece)
// carry every event byte once, in order, chain Prev to Last, count each
// whole transaction once, and a packed entry's buffer is sized exactly
// (allocated once, not grown).
func TestEntriesKeepEveryByteInOrder(t *testing.T) {
	const bound = 1000
	s := newSink(nil, nil, 7, bound, nil, nil)
	sizes := []int{300, 900, 200, 200, 200, 200, 200, 1, 2500, 400, 999, 1, 1000, 50}
	// The transactions are slices of one array, as SplitTxns returns
	// them: a write through an aliased entry would show in the next one.
	var want []byte
	for i, n := range sizes {
		want = append(want, bytes.Repeat([]byte{byte(i + 1)}, n)...)
	}
	// A streamed piece of the next transaction (More) ends the batch.
	want = append(want, bytes.Repeat([]byte{0xEE}, 600)...)
	all := bytes.Clone(want)
	var txns []binlog.Txn
	off := 0
	for i, n := range sizes {
		txns = append(txns, binlog.Txn{GTID: binlog.GTID{Server: 1, Seq: uint64(i + 1)}, Events: all[off : off+n]})
		off += n
	}
	txns = append(txns, binlog.Txn{GTID: binlog.GTID{Server: 1, Seq: uint64(len(sizes) + 1)}, Events: all[off:], More: true})

	prev := binlog.GTID{Server: 1, Seq: 0}
	entries := s.entries(prev, txns)
	var got []byte
	count := uint32(0)
	for i, b := range entries {
		if b.Epoch != 7 {
			t.Errorf("entry %d: epoch %d", i, b.Epoch)
		}
		if binlog.GTID(b.Prev) != prev {
			t.Errorf("entry %d: prev %v, want %v", i, binlog.GTID(b.Prev), prev)
		}
		if !b.More && !b.Continued && b.TxnCount > 1 && cap(b.Events) != len(b.Events) {
			t.Errorf("entry %d: %d bytes of events in a buffer of %d", i, len(b.Events), cap(b.Events))
		}
		if len(b.Events) > bound {
			t.Errorf("entry %d: %d bytes of events, over %d", i, len(b.Events), bound)
		}
		got = append(got, b.Events...)
		count += b.TxnCount
		if !b.More {
			prev = binlog.GTID(b.Last)
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("events differ: got %d bytes, want %d", len(got), len(want))
	}
	if !bytes.Equal(all, want) {
		t.Fatal("building the entries changed the transactions' bytes")
	}
	if count != uint32(len(sizes)) {
		t.Errorf("TxnCount sums to %d, want %d", count, len(sizes))
	}
}
