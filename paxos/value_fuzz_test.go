package paxos

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	pb "phxgo/proto"
)

func TestValueRoundTrip(t *testing.T) {
	cmds := []command{
		{Node: 1, Seq: 10, MinPending: 7, Data: []byte("hello")},
		{Node: 1 << 31, Seq: 1 << 60, MinPending: 1 << 60, Flags: flagBarrier},
		{Node: 3, Seq: 5, MinPending: 5, Data: bytes.Repeat([]byte{0xff}, 300)},
	}
	var enc [][]byte
	for _, c := range cmds {
		enc = append(enc, appendCommand(nil, c))
		if !validCommand(enc[len(enc)-1]) {
			t.Fatalf("own encoding of %+v invalid", c)
		}
	}
	got, err := decodeValue(encodeValue(enc))
	if err != nil {
		t.Fatal(err)
	}
	for i := range cmds {
		if got[i].Node != cmds[i].Node || got[i].Seq != cmds[i].Seq || got[i].MinPending != cmds[i].MinPending ||
			got[i].Flags != cmds[i].Flags || !bytes.Equal(got[i].Data, cmds[i].Data) {
			t.Fatalf("cmd %d: got %+v want %+v", i, got[i], cmds[i])
		}
	}
	if got, err := decodeValue(nil); err != nil || got != nil {
		t.Fatalf("noop: %v %v", got, err)
	}
	for _, bad := range [][]byte{{0}, {1}, {1, 1, 1, 2, 0, 0}, {1, 1, 1, 1, 0x80, 5, 'a'}} {
		if _, err := decodeValue(bad); err == nil {
			t.Errorf("decodeValue(%x) accepted", bad)
		}
	}
}

// FuzzDecodeValue: any input either fails cleanly or decodes to commands
// that re-encode to exactly the input.
func FuzzDecodeValue(f *testing.F) {
	f.Add([]byte{})
	f.Add(encodeValue([][]byte{appendCommand(nil, command{Node: 1, Seq: 2, MinPending: 1, Data: []byte("x")})}))
	f.Add(encodeValue([][]byte{appendCommand(nil, command{Node: 9, Seq: 9, MinPending: 9, Flags: flagBarrier})}))
	f.Fuzz(func(t *testing.T, b []byte) {
		cmds, err := decodeValue(b)
		if err != nil || len(b) == 0 {
			return
		}
		var enc [][]byte
		for _, c := range cmds {
			enc = append(enc, appendCommand(nil, c))
		}
		// Varints may be non-minimal in the input; compare decodings.
		again, err := decodeValue(encodeValue(enc))
		if err != nil || len(again) != len(cmds) {
			t.Fatalf("re-encoding failed: %v", err)
		}
		for i := range cmds {
			if again[i].Seq != cmds[i].Seq || !bytes.Equal(again[i].Data, cmds[i].Data) {
				t.Fatalf("cmd %d changed", i)
			}
		}
	})
}

// FuzzSnapshotTable: the applier's snapshot header never panics.
func FuzzSnapshotTable(f *testing.F) {
	a := newApplier(&listSM{})
	a.admit(command{Node: 1, Seq: 5, MinPending: 3})
	snap, _ := a.snapshot()
	f.Add(snap)
	f.Add([]byte("PXS1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		a := newApplier(&listSM{})
		_, _ = a.decodeTable(b)
	})
}

// FuzzPeerBatch: arbitrary bytes from the wire never crash the decoder
// nor the core that steps the decoded messages.
func FuzzPeerBatch(f *testing.F) {
	m := Message{Type: MsgAccept, From: 2, To: 1, Ballot: Ballot{Round: 3, Node: 2}, Chosen: 1,
		Entries: []Entry{{Index: 1, Ballot: Ballot{Round: 3, Node: 2}, Value: encodeValue(nil)}}}
	b, _ := proto.Marshal(&pb.PaxosBatch{Messages: []*pb.PaxosMessage{messageToProto(&m)}})
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		var batch pb.PaxosBatch
		if proto.Unmarshal(b, &batch) != nil {
			return
		}
		st := NewMemoryStorage()
		c := newCore(coreConfig{ID: 1, Peers: []uint32{1, 2, 3}, ElectionTicks: 3, HeartbeatTicks: 1,
			RetransmitTicks: 2, RetryTicks: 6, Window: 4, BatchMaxBytes: 100, FetchMaxBytes: 100}, st.HardState(), nil, st)
		for _, pm := range batch.Messages {
			if m, ok := messageFromProto(pm); ok {
				c.step(m)
			}
		}
		rd := c.ready()
		if err := st.Save(rd.Update); err != nil {
			t.Fatal(err)
		}
	})
}
