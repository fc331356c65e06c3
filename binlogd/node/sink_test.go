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
