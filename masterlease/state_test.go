package masterlease

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	pb "phxgo/proto"
)

func g(seq uint64) GTID { return GTID{Domain: 0, Server: 1, Seq: seq} }

// base is a term with master 1 at epoch 3, version 5, last valid 0-1-10.
var base = State{Version: 5, Epoch: 3, Master: 1, LastGTID: g(10), Applied: 40, LastBatchIndex: 39, TermIndex: 30}

func batch(prev, last GTID, mod func(*Batch)) []byte {
	b := Batch{Epoch: 3, Prev: prev, Last: last, Events: []byte("events"), TxnCount: 1}
	if mod != nil {
		mod(&b)
	}
	return EncodeBatch(b)
}

func TestStep(t *testing.T) {
	fenced := base
	fenced.Master, fenced.Epoch, fenced.Version = 0, 4, 6
	partial := base
	partial.Partial, partial.PartialBytes = g(11), 6 // one 6-byte fragment so far
	v99 := marshalRaw(&pb.LogEntry{Version: 99, Kind: &pb.LogEntry_Noop{Noop: &pb.EntryNoop{}}})
	noVersion := marshalRaw(&pb.LogEntry{Kind: &pb.LogEntry_Noop{Noop: &pb.EntryNoop{}}})
	noKind := marshalRaw(&pb.LogEntry{Version: 1})

	tests := []struct {
		name   string
		st     State
		cmd    []byte
		reason Reason
		want   func(s State) State // expected state when valid
	}{
		{"noop", base, EncodeNoop(), ReasonNone, func(s State) State { return s }},
		{"grant new term", base, EncodeLeaseRequest(LeaseRequest{Candidate: 2, SeenVersion: 5}), ReasonNone,
			func(s State) State { s.Version, s.Epoch, s.Master, s.TermIndex = 6, 4, 2, 41; return s }},
		{"grant to current master without renew starts a new term", base,
			EncodeLeaseRequest(LeaseRequest{Candidate: 1, SeenVersion: 5}), ReasonNone,
			func(s State) State { s.Version, s.Epoch, s.TermIndex = 6, 4, 41; return s }},
		{"grant voids partial", partial, EncodeLeaseRequest(LeaseRequest{Candidate: 2, SeenVersion: 5}), ReasonNone,
			func(s State) State {
				s.Version, s.Epoch, s.Master, s.TermIndex, s.Partial, s.PartialBytes = 6, 4, 2, 41, GTID{}, 0
				return s
			}},
		{"renew keeps epoch and partial", partial, EncodeLeaseRequest(LeaseRequest{Candidate: 1, SeenVersion: 5, Renew: true}), ReasonNone,
			func(s State) State { s.Version = 6; return s }},
		{"grant after fence", fenced, EncodeLeaseRequest(LeaseRequest{Candidate: 3, SeenVersion: 6}), ReasonNone,
			func(s State) State { s.Version, s.Epoch, s.Master, s.TermIndex = 7, 5, 3, 41; return s }},
		{"stale seen version", base, EncodeLeaseRequest(LeaseRequest{Candidate: 2, SeenVersion: 4}), ReasonVersionMismatch, nil},
		{"future seen version", base, EncodeLeaseRequest(LeaseRequest{Candidate: 2, SeenVersion: 6}), ReasonVersionMismatch, nil},
		{"renew by non-master", base, EncodeLeaseRequest(LeaseRequest{Candidate: 2, SeenVersion: 5, Renew: true}), ReasonNotHolder, nil},
		{"renew with no master", fenced, EncodeLeaseRequest(LeaseRequest{Candidate: 1, SeenVersion: 6, Renew: true}), ReasonNotHolder, nil},
		{"lease without candidate", base, EncodeLeaseRequest(LeaseRequest{SeenVersion: 5}), ReasonMalformed, nil},
		{"fence current term", partial, EncodeFence(Fence{Epoch: 3, From: 1}), ReasonNone,
			func(s State) State {
				s.Version, s.Epoch, s.Master, s.TermIndex, s.Partial, s.PartialBytes = 6, 4, 0, 41, GTID{}, 0
				return s
			}},
		{"stale fence", base, EncodeFence(Fence{Epoch: 2}), ReasonStaleEpoch, nil},
		{"future fence", base, EncodeFence(Fence{Epoch: 4}), ReasonStaleEpoch, nil},
		{"fence twice", fenced, EncodeFence(Fence{Epoch: 4}), ReasonNoMaster, nil},
		{"batch extends chain", base, batch(g(10), g(13), func(b *Batch) { b.TxnCount = 3 }), ReasonNone,
			func(s State) State { s.LastGTID, s.LastBatchIndex = g(13), 41; return s }},
		{"first batch of the log", State{Version: 1, Epoch: 1, Master: 1}, EncodeBatch(Batch{Epoch: 1, Last: g(1), Events: []byte("x"), TxnCount: 1}), ReasonNone,
			func(s State) State { s.LastGTID, s.LastBatchIndex = g(1), 41; return s }},
		{"batch of old epoch", base, batch(g(10), g(11), func(b *Batch) { b.Epoch = 2 }), ReasonStaleEpoch, nil},
		{"batch of future epoch", base, batch(g(10), g(11), func(b *Batch) { b.Epoch = 4 }), ReasonStaleEpoch, nil},
		{"batch after fence", fenced, batch(g(10), g(11), func(b *Batch) { b.Epoch = 4 }), ReasonNoMaster, nil},
		{"chain gap", base, batch(g(11), g(12), nil), ReasonChain, nil},
		{"chain duplicate", base, batch(g(9), g(10), nil), ReasonChain, nil},
		{"chain fork (other server)", base, batch(GTID{0, 2, 10}, GTID{0, 2, 11}, nil), ReasonChain, nil},
		{"last does not follow prev", base, batch(g(10), g(10), nil), ReasonChain, nil},
		{"second domain", base, batch(g(10), GTID{1, 1, 11}, nil), ReasonChain, nil},
		{"bad checksum", base, batch(g(10), g(11), func(b *Batch) { b.Checksum = 0xdeadbeef }), ReasonBadChecksum, nil},
		{"empty batch", base, batch(g(10), g(11), func(b *Batch) { b.Events = nil }), ReasonMalformed, nil},
		{"batch without last", base, batch(g(10), GTID{}, nil), ReasonMalformed, nil},
		{"batch completing nothing", base, batch(g(10), g(11), func(b *Batch) { b.TxnCount = 0 }), ReasonMalformed, nil},
		{"first fragment", base, batch(g(10), g(11), func(b *Batch) { b.TxnCount, b.More = 0, true }), ReasonNone,
			func(s State) State { s.Partial, s.PartialBytes, s.LastBatchIndex = g(11), 6, 41; return s }},
		{"middle fragment", partial, batch(g(10), g(11), func(b *Batch) { b.TxnCount, b.More, b.Continued, b.Offset = 0, true, true, 6 }), ReasonNone,
			func(s State) State { s.PartialBytes, s.LastBatchIndex = 12, 41; return s }},
		{"repeated fragment", partial, batch(g(10), g(11), func(b *Batch) { b.TxnCount, b.More, b.Continued, b.Offset = 0, true, true, 0 }), ReasonBadFragment, nil},
		{"first fragment at an offset", base, batch(g(10), g(11), func(b *Batch) { b.TxnCount, b.More, b.Offset = 0, true, 6 }), ReasonBadFragment, nil},
		{"last fragment", partial, batch(g(10), g(11), func(b *Batch) { b.Continued, b.Offset = true, 6 }), ReasonNone,
			func(s State) State {
				s.LastGTID, s.Partial, s.PartialBytes, s.LastBatchIndex = g(11), GTID{}, 0, 41
				return s
			}},
		{"fragment carrying other transactions", base, batch(g(10), g(12), func(b *Batch) { b.TxnCount, b.More = 1, true }), ReasonBadFragment, nil},
		{"new start while partial", partial, batch(g(10), g(12), nil), ReasonBadFragment, nil},
		{"continuation without partial", base, batch(g(10), g(11), func(b *Batch) { b.Continued = true }), ReasonBadFragment, nil},
		{"continuation of another transaction", partial, batch(g(10), g(12), func(b *Batch) { b.Continued = true }), ReasonBadFragment, nil},
		{"last fragment claiming two", partial, batch(g(10), g(11), func(b *Batch) { b.Continued, b.TxnCount = true, 2 }), ReasonBadFragment, nil},
		{"unknown version", base, v99, ReasonUnknownVersion, nil},
		{"missing version", base, noVersion, ReasonMalformed, nil},
		{"no kind", base, noKind, ReasonMalformed, nil},
		{"garbage", base, []byte{0xff, 0xff, 0xff}, ReasonMalformed, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, v := Step(tc.st, 41, tc.cmd)
			if v.Reason != tc.reason {
				t.Fatalf("reason %v (%s), want %v", v.Reason, v.Detail, tc.reason)
			}
			if v.Index != 41 || got.Applied != 41 || v.State != got {
				t.Fatalf("index/applied/state not reported: %+v", v)
			}
			if tc.reason != ReasonNone {
				want := tc.st
				want.Applied = 41
				if v.Valid || got != want {
					t.Fatalf("rejected entry changed state: %v -> %v", tc.st, got)
				}
				err := v.Err()
				if !errors.Is(err, tc.reason.Sentinel()) || v.Detail == "" {
					t.Fatalf("err %v does not wrap %v", err, tc.reason.Sentinel())
				}
				return
			}
			want := tc.want(tc.st)
			want.Applied = 41
			if !v.Valid || v.Err() != nil || got != want {
				t.Fatalf("state %v, want %v", got, want)
			}
		})
	}
}

func TestChainRejectionNamesExpectedAndGot(t *testing.T) {
	_, v := Step(base, 41, batch(g(12), g(13), nil))
	var re *RejectError
	if !errors.As(v.Err(), &re) || re.Expected != g(10) || re.Got != g(12) || v.Expected != g(10) {
		t.Fatalf("verdict %+v, err %v", v, v.Err())
	}
}

// TestStaleBatchPassesChainNotEpoch is the reason for the epoch: master 1
// proposed 0-1-11 on top of 0-1-10 in epoch 3 and crashed; only a minority
// accepted it. Its MariaDB was cut back to 0-1-10 and the term fenced; node
// 2 won epoch 5 and has not written yet. When a later Paxos leader chooses
// the old value, its chain matches (prev 0-1-10 is still the last valid
// GTID), and even a new 0-1-11 written by a restarted node 1 would reuse
// the number. Only the epoch rejects it.
func TestStaleBatchPassesChainNotEpoch(t *testing.T) {
	stale := batch(g(10), g(11), nil) // epoch 3
	st := base
	var v Verdict
	for i, cmd := range [][]byte{
		EncodeFence(Fence{Epoch: 3, From: 2}),
		EncodeLeaseRequest(LeaseRequest{Candidate: 2, SeenVersion: 6}),
		stale,
	} {
		st, v = Step(st, uint64(41+i), cmd)
	}
	if v.Valid || v.Reason != ReasonStaleEpoch || st.LastGTID != g(10) {
		t.Fatalf("stale batch: %+v state %v", v, st)
	}
	// The same batch, re-stamped with the current epoch, passes the chain.
	fresh := batch(g(10), g(11), func(b *Batch) { b.Epoch = st.Epoch })
	if _, v := Step(st, 44, fresh); !v.Valid {
		t.Fatalf("chain check rejected it too: %+v", v)
	}
}

func TestDecodeRoundTrip(t *testing.T) {
	b := Batch{Epoch: 7, Prev: g(3), Last: GTID{0, 2, 9}, Events: []byte{1, 2, 3}, TxnCount: 0, More: true, Continued: true}
	e, err := Decode(EncodeBatch(b))
	b.Checksum = Checksum(b.Events)
	if err != nil || e.Kind != KindBatch || string(e.Batch.Events) != string(b.Events) {
		t.Fatalf("%v %+v", err, e)
	}
	e.Batch.Events, b.Events = nil, nil
	if !reflect.DeepEqual(e.Batch, b) {
		t.Fatalf("got %+v want %+v", e.Batch, b)
	}
	_, err = Decode(marshalRaw(&pb.LogEntry{Version: 2}))
	if !errors.Is(err, ErrUnknownVersion) {
		t.Fatalf("version 2: %v", err)
	}
	st := State{Version: 1, Epoch: 2, Master: 3, LastGTID: g(4), Partial: g(5), PartialBytes: 9, Applied: 6, LastBatchIndex: 7, TermIndex: 8}
	if got, err := DecodeState(EncodeState(st)); err != nil || got != st {
		t.Fatalf("state round trip: %v %v", got, err)
	}
}

func marshalRaw(m *pb.LogEntry) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		key string
		mod func(*Config)
	}{
		{"LeaseDuration", func(c *Config) { c.LeaseDuration = 0 }},
		{"DriftMargin", func(c *Config) { c.DriftMargin = 0 }},
		{"DriftMargin", func(c *Config) { c.DriftMargin = c.LeaseDuration / 2 }},
		{"RenewInterval", func(c *Config) { c.RenewInterval = c.LeaseDuration - c.DriftMargin }},
		{"RenewInterval", func(c *Config) { c.RenewInterval = -1 }},
		{"RetryInterval", func(c *Config) { c.RetryInterval = c.RenewInterval }},
		{"RetryInterval", func(c *Config) { c.RetryInterval = 0 }},
	} {
		c := DefaultConfig()
		tc.mod(&c)
		err := c.Validate()
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s: %v", tc.key, err)
		}
	}
	if d := DefaultConfig().MaxClockDrift(); d < 0.05 || d > 0.06 {
		t.Errorf("MaxClockDrift %v", d)
	}
}
