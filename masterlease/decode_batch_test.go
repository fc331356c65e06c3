package masterlease

import (
	"bytes"
	"reflect"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// FuzzDecodeBatch: wherever the copy-free batch decoder answers, it gives
// exactly what proto.Unmarshal gives; seeds include every kind, repeated
// and unknown fields, and cut-off input (which it must leave to proto).
func FuzzDecodeBatch(f *testing.F) {
	for _, s := range decodeSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd []byte) { checkDecodeBatch(t, cmd) })
}

// TestDecodeBatchSeeds runs the fuzz seeds, and checks that the decoder
// takes the common batch itself without copying its events.
func TestDecodeBatchSeeds(t *testing.T) {
	for _, s := range decodeSeeds() {
		checkDecodeBatch(t, s)
	}
	b := Batch{Epoch: 3, Prev: GTID{0, 1, 9}, Last: GTID{0, 1, 12}, Events: []byte("some events"), TxnCount: 3, Offset: 0}
	cmd := EncodeBatch(b)
	e, ok := decodeBatch(cmd)
	if !ok {
		t.Fatal("decodeBatch refused a plain batch")
	}
	if &e.Batch.Events[0] != &cmd[bytes.Index(cmd, b.Events)] || cap(e.Batch.Events) != len(b.Events) {
		t.Fatal("Events do not alias the command (or their capacity reaches past them)")
	}
	if e.Batch.Checksum != Checksum(b.Events) {
		t.Fatalf("checksum %x", e.Batch.Checksum)
	}
}

func checkDecodeBatch(t *testing.T, cmd []byte) {
	t.Helper()
	fast, ok := decodeBatch(cmd)
	if !ok {
		return
	}
	slow, err := decodeProto(cmd)
	if err != nil {
		t.Fatalf("decodeBatch took %x, proto refuses it: %v", cmd, err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("decodeBatch(%x) = %+v, proto gives %+v", cmd, fast, slow)
	}
}

func decodeSeeds() [][]byte {
	full := EncodeBatch(Batch{Epoch: 7, Prev: GTID{1, 2, 3}, Last: GTID{1, 2, 5}, Events: []byte{1, 2, 3, 4},
		TxnCount: 2, More: true, Continued: true, Offset: 99})
	empty := EncodeBatch(Batch{})
	tag := func(b []byte, num protowire.Number, typ protowire.Type) []byte {
		return protowire.AppendTag(b, num, typ)
	}
	var dupVersion, unknown, dupEvents, wideUint []byte
	dupVersion = append(tag(nil, 1, protowire.VarintType), 1)
	dupVersion = append(dupVersion, full...)
	unknown = append(append([]byte{}, full...), tag(nil, 9, protowire.VarintType)...)
	unknown = append(unknown, 5)
	inner := protowire.AppendBytes(tag(nil, 4, protowire.BytesType), []byte("a"))
	inner = protowire.AppendBytes(tag(inner, 4, protowire.BytesType), []byte("b"))
	dupEvents = protowire.AppendBytes(tag(append(tag(nil, 1, protowire.VarintType), 1), 5, protowire.BytesType), inner)
	inner = protowire.AppendVarint(tag(nil, 6, protowire.VarintType), 1<<40|3) // txn_count truncates to 32 bits
	inner = protowire.AppendVarint(tag(inner, 7, protowire.VarintType), 2)     // any non-zero bool is true
	wideUint = protowire.AppendBytes(tag(append(tag(nil, 1, protowire.VarintType), 1), 5, protowire.BytesType), inner)
	seeds := [][]byte{
		{}, full, empty, dupVersion, unknown, dupEvents, wideUint,
		EncodeNoop(), EncodeFence(Fence{Epoch: 2, From: 1}), EncodeLeaseRequest(LeaseRequest{Candidate: 2, SeenVersion: 4}),
	}
	for i := 1; i < len(full); i += 3 {
		seeds = append(seeds, full[:i])
	}
	return seeds
}
