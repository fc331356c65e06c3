package paxos

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"phxgo/wal"
)

// digestLog stores values 1..n in a MemoryStorage as chosen and applied.
func digestLog(t testing.TB, n int, value func(i uint64) []byte) *MemoryStorage {
	t.Helper()
	st := NewMemoryStorage()
	u := wal.Update{Chosen: uint64(n)}
	for i := uint64(1); i <= uint64(n); i++ {
		u.Accepted = append(u.Accepted, wal.Accepted{Index: i, Ballot: Ballot{Round: 1, Node: 1}, Value: value(i)})
	}
	if err := st.Save(u); err != nil {
		t.Fatal(err)
	}
	return st
}

func digestValue(i uint64) []byte {
	switch {
	case i%5 == 0:
		return nil // a Noop
	case i%7 == 0:
		return bytes.Repeat([]byte{byte(i)}, 3<<20) // a big value
	}
	return testValue(fmt.Sprintf("cmd-%d", i))
}

// applyDigests runs a digester over storage's [from, to] as the applier
// does and returns the finished ranges.
func applyDigests(t testing.TB, d *digester, st Storage, from, to uint64) []RangeDigest {
	t.Helper()
	var out []RangeDigest
	for i := from; i <= to; i++ {
		a, ok, err := st.Get(i)
		if err != nil || !ok {
			t.Fatalf("get %d: %v %v", i, ok, err)
		}
		if rd, ok := d.add(i, a.Value); ok {
			out = append(out, rd)
		}
	}
	return out
}

// TestDigestRangesAndBytes: a range's digest is SHA-256 over (index,
// length, value) of each entry, is finished at the range's last index,
// and equals what digestStored computes from storage.
func TestDigestRangesAndBytes(t *testing.T) {
	st := digestLog(t, 20, digestValue)
	d := newDigester(8)
	d.reset(0)
	got := applyDigests(t, d, st, 1, 20)
	if len(got) != 2 || got[0].First != 1 || got[0].Last != 8 || got[1].First != 9 || got[1].Last != 16 {
		t.Fatalf("ranges %v; want [1,8] and [9,16]", got)
	}
	for _, g := range got {
		s, ok, err := digestStored(st, g.First, g.Last)
		if err != nil || !ok || s != g {
			t.Fatalf("stored digest %v %v %v; applied %v", s, ok, err, g)
		}
	}
	// Every byte counts: a value moved between two entries changes it.
	other := digestLog(t, 20, func(i uint64) []byte {
		switch i {
		case 2:
			return append(digestValue(2), digestValue(3)[:1]...)
		case 3:
			return digestValue(3)[1:]
		}
		return digestValue(i)
	})
	if s, _, _ := digestStored(other, 1, 8); s.Sum == got[0].Sum {
		t.Fatal("a byte moved between two entries left the digest unchanged")
	}
	if s, _, _ := digestStored(other, 9, 16); s.Sum != got[1].Sum {
		t.Fatal("the next range changed too")
	}
}

// TestDigestRestartMidRange: a node restarting with applied inside a
// range re-hashes the applied part from its storage and finishes the
// range with the digest of a node that never stopped; if that part is
// compacted (or a snapshot was installed inside the range), the range is
// unknown there (no digest), never a different one.
func TestDigestRestartMidRange(t *testing.T) {
	st := digestLog(t, 24, digestValue)
	whole := newDigester(8)
	whole.reset(0)
	want := applyDigests(t, whole, st, 1, 24)

	for _, applied := range []uint64{3, 8, 13, 16, 23} {
		d := newDigester(8)
		d.reset(applied)
		if err := d.resume(st); err != nil {
			t.Fatal(err)
		}
		got := applyDigests(t, d, st, applied+1, 24)
		var wantAfter []RangeDigest
		for _, w := range want {
			if w.Last > applied {
				wantAfter = append(wantAfter, w)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(wantAfter) {
			t.Fatalf("restart at %d: %v; want %v", applied, got, wantAfter)
		}
	}

	// Compacted below 12: the range [9,16] cannot be re-hashed after a
	// restart at 13; [17,24] is known again.
	if err := st.TruncateBelow(1); err != nil {
		t.Fatal(err)
	}
	if err := st.SaveApplied(13, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.TruncateBelow(12); err != nil {
		t.Fatal(err)
	}
	d := newDigester(8)
	d.reset(13)
	if err := d.resume(st); err != nil {
		t.Fatal(err)
	}
	got := applyDigests(t, d, st, 14, 24)
	if len(got) != 1 || got[0] != want[2] {
		t.Fatalf("after a compaction inside the range: %v; want only %v", got, want[2])
	}
}

// TestDigestFile: records survive a reopen; a torn tail and a damaged
// record are skipped; the file is rewritten once it grows.
func TestDigestFile(t *testing.T) {
	dir := t.TempDir()
	f, ds, err := openDigestFile(dir)
	if err != nil || len(ds) != 0 {
		t.Fatalf("fresh: %v %v", ds, err)
	}
	var want []RangeDigest
	for k := uint64(0); k < 3; k++ {
		d := RangeDigest{First: k*8 + 1, Last: k*8 + 8}
		d.Sum[0] = byte(k + 1)
		want = append(want, d)
		if err := f.append(d, nil); err != nil {
			t.Fatal(err)
		}
	}
	f.close()
	path := filepath.Join(dir, digestFileName)
	b, _ := os.ReadFile(path)
	b[digestRecordSize+20] ^= 1                             // damage the second record
	b = append(b, encodeDigestRecord(nil, want[0])[:30]...) // a torn tail
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	f, ds, err = openDigestFile(dir)
	if err != nil || fmt.Sprint(ds) != fmt.Sprint([]RangeDigest{want[0], want[2]}) {
		t.Fatalf("reopened: %v %v", ds, err)
	}
	if st, _ := os.Stat(path); st.Size() != 2*digestRecordSize {
		t.Fatalf("size %d after the torn tail: want it rewritten", st.Size())
	}
	var all []RangeDigest
	for k := uint64(0); k < 4*digestKeepOwn; k++ {
		d := RangeDigest{First: k*8 + 1, Last: k*8 + 8}
		all = append(all, d)
		if err := f.append(d, func() []RangeDigest { return all[max(0, len(all)-digestKeepOwn):] }); err != nil {
			t.Fatal(err)
		}
	}
	f.close()
	if ds, _, _ := readDigestFile(path); len(ds) > 4*digestKeepOwn || ds[len(ds)-1] != all[len(all)-1] {
		t.Fatalf("after growth: %d records, last %v", len(ds), ds[len(ds)-1])
	}
}

// TestDigestBook: a differing digest of a range both hold is one
// divergence per (peer, range), whichever arrives first; other ranges
// (unknown here, or of another range size) are not; the majority of the
// digests known names the odd node.
func TestDigestBook(t *testing.T) {
	sum := func(b byte) (s [32]byte) { s[0] = b; return }
	b := newDigestBook(1)
	if divs := b.addOwn(RangeDigest{First: 1, Last: 8, Sum: sum(1)}); len(divs) != 0 {
		t.Fatal(divs)
	}
	// Peer 2 agrees; peer 3 differs on [1,8] and sends ranges we lack or
	// of another size.
	if divs := b.addPeer(2, []RangeDigest{{First: 1, Last: 8, Sum: sum(1)}}); len(divs) != 0 {
		t.Fatal(divs)
	}
	divs := b.addPeer(3, []RangeDigest{{First: 1, Last: 8, Sum: sum(9)}, {First: 9, Last: 16, Sum: sum(9)}, {First: 1, Last: 16, Sum: sum(9)}})
	if len(divs) != 1 || divs[0].Peer != 3 || divs[0].First != 1 || divs[0].Odd() != 3 || divs[0].Known != 3 || divs[0].OursCount != 2 {
		t.Fatalf("divergences %+v; want [1,8] with peer 3, node 3 odd", divs)
	}
	if divs := b.addPeer(3, []RangeDigest{{First: 1, Last: 8, Sum: sum(9)}}); len(divs) != 0 {
		t.Fatalf("reported twice: %v", divs)
	}
	// Our own digest arriving after the peer's.
	divs = b.addOwn(RangeDigest{First: 9, Last: 16, Sum: sum(2)})
	if len(divs) != 1 || divs[0].Peer != 3 || divs[0].First != 9 || divs[0].Odd() != 0 {
		t.Fatalf("divergences %+v; want [9,16] with peer 3, odd unknown (one against one)", divs)
	}
	if _, all, n := b.status(); n != 2 || len(all) != 2 {
		t.Fatalf("status: %v, %d seen", all, n)
	}
	// The majority against us: we are the odd one.
	b2 := newDigestBook(3)
	b2.addOwn(RangeDigest{First: 1, Last: 8, Sum: sum(9)})
	b2.addPeer(1, []RangeDigest{{First: 1, Last: 8, Sum: sum(1)}})
	b2.addPeer(2, []RangeDigest{{First: 1, Last: 8, Sum: sum(1)}})
	if _, all, _ := b2.status(); len(all) != 2 || all[0].Odd() != 3 || all[1].Odd() != 3 {
		t.Fatalf("%+v: want node 3 (this one) odd", all)
	}
	// Five members: a forked node 4 and a liar 5 sending node 4's digest
	// are two of five, not a majority, however early they speak.
	b5 := newDigestBook(1)
	b5.setMembers(5)
	b5.addOwn(RangeDigest{First: 1, Last: 8, Sum: sum(1)})
	b5.addPeer(4, []RangeDigest{{First: 1, Last: 8, Sum: sum(9)}})
	b5.addPeer(5, []RangeDigest{{First: 1, Last: 8, Sum: sum(9)}})
	if odd := b5.oddNow(); len(odd) != 0 {
		t.Fatalf("two of five named this node odd: %+v", odd)
	}
	b5.addPeer(2, []RangeDigest{{First: 1, Last: 8, Sum: sum(1)}})
	b5.addPeer(3, []RangeDigest{{First: 1, Last: 8, Sum: sum(1)}})
	if _, all, _ := b5.status(); len(all) != 2 || all[0].Odd() != 4 || all[1].Odd() != 5 {
		t.Fatalf("%+v: want nodes 4 and 5 odd once three of five agree", all)
	}
}

// TestOddMarks: a node the majority names odd records it durably; the
// mark survives a reload, once per range; a damaged line is skipped.
func TestOddMarks(t *testing.T) {
	dir := t.TempDir()
	o, err := loadOddMarks(dir)
	if err != nil || len(o.list()) != 0 {
		t.Fatal(o.list(), err)
	}
	r := OddRange{First: 9, Last: 16, At: time.Unix(0, 12345)}
	r.Ours[0], r.Majority[0] = 1, 2
	if isNew, err := o.add(r); !isNew || err != nil {
		t.Fatal(isNew, err)
	}
	if isNew, _ := o.add(r); isNew {
		t.Fatal("added twice")
	}
	f, _ := os.OpenFile(filepath.Join(dir, oddFileName), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString("9 16 zz\n")
	f.Close()
	o, err = loadOddMarks(dir)
	if got := o.list(); err != nil || len(got) != 1 || got[0] != r {
		t.Fatalf("reloaded %+v %v; want %+v", got, err, r)
	}
}

// BenchmarkDigestAdd is the cost per applied entry of the log digest,
// by value size.
func BenchmarkDigestAdd(b *testing.B) {
	for _, size := range []int{0, 128, 4 << 10, 64 << 10, 256 << 10} {
		b.Run(fmt.Sprintf("value=%d", size), func(b *testing.B) {
			v := bytes.Repeat([]byte{7}, size)
			d := newDigester(DefaultDigestRange)
			d.reset(0)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				d.add(uint64(i)+1, v)
			}
		})
	}
}

// TestDigestsOnTheWire: digests survive the proto codec; a message from
// an older node (no digests) decodes as before, with none; a malformed
// list (a short sum, too many) is dropped whole while the message stays.
func TestDigestsOnTheWire(t *testing.T) {
	d := RangeDigest{First: 257, Last: 512}
	d.Sum[5] = 9
	m := Message{Type: MsgAccept, From: 1, To: 2, Ballot: Ballot{Round: 3, Node: 1}, Chosen: 7, Digests: []RangeDigest{d}}
	got, ok := messageFromProto(messageToProto(&m))
	if !ok || len(got.Digests) != 1 || got.Digests[0] != d {
		t.Fatalf("round trip: %v %v", got.Digests, ok)
	}
	old := messageToProto(&Message{Type: MsgAccept, From: 1, To: 2, Ballot: Ballot{Round: 3, Node: 1}, Chosen: 7})
	if got, ok := messageFromProto(old); !ok || got.Digests != nil || got.Chosen != 7 {
		t.Fatalf("an older node's heartbeat: %+v %v", got, ok)
	}
	p := messageToProto(&m)
	p.Digests[0].Sum = p.Digests[0].Sum[:31]
	if got, ok := messageFromProto(p); !ok || got.Digests != nil {
		t.Fatalf("a short sum: %v %v; want the message without digests", got.Digests, ok)
	}
	many := m
	many.Digests = make([]RangeDigest, maxDigestsPerMessage+1)
	if got, ok := messageFromProto(messageToProto(&many)); !ok || got.Digests != nil {
		t.Fatalf("too many digests: %d %v", len(got.Digests), ok)
	}
	only := Message{Type: MsgDigests, From: 1, To: 2, Digests: []RangeDigest{d}}
	if got, ok := messageFromProto(messageToProto(&only)); !ok || got.Type != MsgDigests || len(got.Digests) != 1 {
		t.Fatalf("MsgDigests: %+v %v", got, ok)
	}
	// The core never takes one: it would drop it as an unknown type.
	c := hostileCore(t)
	c.step(only)
	if c.dropped[DropBadType] != 1 {
		t.Fatalf("the core stepped a MsgDigests: dropped %v", c.dropped)
	}
}
