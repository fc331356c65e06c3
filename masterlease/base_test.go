package masterlease

import "testing"

// TestSetBaseChainStartsAtBase: a restored cluster's first batch must
// continue the backup's GTID; one starting from "none" (a MariaDB that
// lost the restored data) breaks the chain.
func TestSetBaseChainStartsAtBase(t *testing.T) {
	l, err := New(DefaultConfig(), 1, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	base := GTID{Domain: 0, Server: 3, Seq: 41}
	l.SetBase(base)
	if got := l.State().LastGTID; got != base {
		t.Fatalf("state before the first entry: last %v, want %v", got, base)
	}
	l.Apply(1, EncodeLeaseRequest(LeaseRequest{Candidate: 1}))
	next := GTID{Domain: 0, Server: 1, Seq: 42}
	if v := l.Apply(2, EncodeBatch(Batch{Epoch: 1, Last: next, Events: []byte("x"), TxnCount: 1})).(Verdict); v.Valid || v.Reason != ReasonChain {
		t.Fatalf("batch from no GTID on a based chain: %+v", v)
	}
	if v := l.Apply(3, EncodeBatch(Batch{Epoch: 1, Prev: base, Last: GTID{Seq: 41, Server: 1}, Events: []byte("x"), TxnCount: 1})).(Verdict); v.Valid {
		t.Fatalf("batch not after the base accepted: %+v", v)
	}
	if v := l.Apply(4, EncodeBatch(Batch{Epoch: 1, Prev: base, Last: next, Events: []byte("x"), TxnCount: 1})).(Verdict); !v.Valid {
		t.Fatalf("batch after the base rejected: %+v", v)
	}
	// A restart without a snapshot replays from the base again.
	if err := l.Restore(0, nil); err != nil {
		t.Fatal(err)
	}
	if got := l.State().LastGTID; got != base {
		t.Fatalf("after Restore(0, nil): last %v, want %v", got, base)
	}
}
