package masterlease

import (
	"bytes"
	"testing"
)

// FuzzStep applies a sequence of entries decoded from the fuzz input, at
// arbitrary (not necessarily increasing) indexes, to the replicated state,
// as a forged or corrupt log would: well-formed lease requests, fences
// and batches whose fields are near the current state (so grants, fences
// and chained batches do happen) or arbitrary, and raw bytes. Step must
// never panic and must keep the lease rules:
//
//   - Version and Epoch never decrease; each change of either is one step;
//   - at most one master per epoch, and no master right after a Fence;
//   - LastGTID only moves forward within one domain;
//   - a rejected entry changes nothing but Applied; Applied is the index;
//   - Step is deterministic, and the state survives its snapshot
//     encoding (what Restore reads back).
func FuzzStep(f *testing.F) {
	for _, seed := range stepFuzzSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) { runStepScript(t, b) })
}

func stepFuzzSeeds() [][]byte {
	return [][]byte{
		{},
		// grant to 1, a chained batch, renew, fence, grant to 2.
		{0, 1, 1, 0, 0, 0, 3, 0, 0, 0, 0, 1, 1, 0, 1, 0, 2, 0, 1, 0, 1, 2, 0, 0},
		// raw garbage, a grant at a huge index, a batch, a jump back.
		{0, 4, 3, 0xff, 0xfe, 7, 6, 0, 1, 1, 0, 0, 0, 3, 0, 0, 0, 7, 1, 3, 0, 0, 0},
		// a grant, then fragments: start, continue, finish.
		{0, 1, 3, 0, 0, 0, 3, 4, 2, 0, 0, 3, 12, 2, 0, 0, 0, 3, 8, 2, 0, 0},
	}
}

type stepScript struct{ b []byte }

func (s *stepScript) byte() byte {
	if len(s.b) == 0 {
		return 0
	}
	v := s.b[0]
	s.b = s.b[1:]
	return v
}

// near picks a number around cur: cur, cur±1, 0, or a raw byte.
func (s *stepScript) near(cur uint64) uint64 {
	switch k := s.byte(); k % 6 {
	case 0, 1:
		return cur
	case 2:
		return cur + 1
	case 3:
		return cur - 1
	case 4:
		return 0
	default:
		return uint64(k)<<56 | uint64(s.byte())
	}
}

// entry builds the next command from the script and the current state.
func (s *stepScript) entry(st State) []byte {
	switch s.byte() % 6 {
	case 0:
		return EncodeNoop()
	case 1:
		return EncodeLeaseRequest(LeaseRequest{Candidate: uint32(s.byte() % 4), SeenVersion: s.near(st.Version), Renew: s.byte()%2 == 1})
	case 2:
		return EncodeFence(Fence{Epoch: s.near(st.Epoch), From: uint32(s.byte() % 4)})
	case 3:
		mode := s.byte()
		last := st.LastGTID
		if mode%4 != 3 {
			last.Domain = 0
			last.Server = 1
			last.Seq = st.LastGTID.Seq + 1
		} else {
			last = GTID{Domain: uint32(s.byte() % 2), Server: 1, Seq: uint64(s.byte())}
		}
		more := mode&4 != 0
		cont := mode&8 != 0
		if cont && !st.Partial.IsZero() {
			last = st.Partial
		}
		var txns uint32
		if !more {
			txns = 1
		}
		events := bytes.Repeat([]byte{mode}, 1+int(s.byte()%8))
		offset := uint64(0)
		if cont {
			offset = s.near(st.PartialBytes)
		}
		b := Batch{Epoch: s.near(st.Epoch), Prev: st.LastGTID, Last: last, Events: events,
			TxnCount: txns, More: more, Continued: cont, Offset: offset}
		if mode&16 != 0 {
			b.Checksum = uint32(s.byte()) + 1 // usually wrong
		}
		if mode&32 != 0 {
			b.Prev = GTID{Seq: uint64(s.byte())}
		}
		return EncodeBatch(b)
	case 4:
		n := int(s.byte() % 32)
		raw := make([]byte, 0, n)
		for i := 0; i < n; i++ {
			raw = append(raw, s.byte())
		}
		return raw
	default:
		// A well-formed entry of a newer encoding.
		e := EncodeNoop()
		return append(e, 0x08, 0x7f) // field 1 (version) = 127 appended: last one wins
	}
}

func runStepScript(t *testing.T, b []byte) (valid map[Kind]int) {
	valid = map[Kind]int{}
	s := &stepScript{b: b}
	var st State
	masters := map[uint64]uint32{} // epoch -> its master
	index := uint64(0)
	for steps := 0; len(s.b) > 0 && steps < 500; steps++ {
		switch k := s.byte(); k % 8 {
		case 7:
			index = uint64(s.byte()) << 40 // jump anywhere, back or forth
		case 6:
			index = ^uint64(0) - uint64(s.byte()%4)
		default:
			index++
		}
		cmd := s.entry(st)
		next, v := Step(st, index, cmd)
		again, v2 := Step(st, index, cmd)
		if again != next || v2.Valid != v.Valid || v2.Reason != v.Reason {
			t.Fatalf("Step is not deterministic: %v/%v vs %v/%v", next, v.Reason, again, v2.Reason)
		}
		if next.Applied != index || v.Index != index || v.State != next {
			t.Fatalf("applied %d, verdict index %d, want %d", next.Applied, v.Index, index)
		}
		if !v.Valid {
			want := st
			want.Applied = index
			if next != want {
				t.Fatalf("rejected entry (%s: %s) changed the state: %v -> %v", v.Reason, v.Detail, st, next)
			}
			if v.Err() == nil {
				t.Fatalf("rejected entry without an error")
			}
		}
		if next.Version < st.Version || next.Epoch < st.Epoch || next.Version > st.Version+1 || next.Epoch > st.Epoch+1 {
			t.Fatalf("version/epoch %d/%d -> %d/%d", st.Version, st.Epoch, next.Version, next.Epoch)
		}
		if next.Master != 0 {
			if m, ok := masters[next.Epoch]; ok && m != next.Master {
				t.Fatalf("epoch %d has masters %d and %d", next.Epoch, m, next.Master)
			}
			masters[next.Epoch] = next.Master
		}
		if v.Valid && v.Entry.Kind == KindFence && next.Master != 0 {
			t.Fatalf("master %d right after a fence", next.Master)
		}
		if !st.LastGTID.IsZero() && next.LastGTID != st.LastGTID &&
			(next.LastGTID.Domain != st.LastGTID.Domain || next.LastGTID.Seq <= st.LastGTID.Seq) {
			t.Fatalf("last GTID %v -> %v", st.LastGTID, next.LastGTID)
		}
		if !next.Partial.IsZero() && next.Partial == next.LastGTID {
			t.Fatalf("partial %v equals the last GTID", next.Partial)
		}
		if back, err := DecodeState(EncodeState(next)); err != nil || back != next {
			t.Fatalf("snapshot round trip: %v, %v vs %v", err, back, next)
		}
		if v.Valid {
			valid[v.Entry.Kind]++
		}
		st = next
	}
	return valid
}

// TestStepFuzzSeeds: the seeds reach the rules (grants, fences, chained
// batches), so the fuzzer starts from real transitions.
func TestStepFuzzSeeds(t *testing.T) {
	got := map[Kind]int{}
	for _, seed := range stepFuzzSeeds() {
		for k, n := range runStepScript(t, seed) {
			got[k] += n
		}
	}
	if got[KindLease] < 2 || got[KindFence] < 1 || got[KindBatch] < 2 {
		t.Fatalf("valid entries by kind %v: the seeds miss the rules", got)
	}
}

// FuzzDecodeState: a snapshot from a peer (or a disk) that does not
// decode is an error, never a panic.
func FuzzDecodeState(f *testing.F) {
	f.Add(EncodeState(State{Version: 3, Epoch: 2, Master: 1, LastGTID: GTID{Server: 1, Seq: 9}}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := DecodeState(b)
		if err == nil {
			if back, err := DecodeState(EncodeState(st)); err != nil || back != st {
				t.Fatalf("round trip: %v", err)
			}
		}
	})
}
