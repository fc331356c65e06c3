package paxos

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"phxgo/wal"
)

// FuzzCoreStep feeds three cores (ids 1-3, each over a MemoryStorage that
// its Readys are saved to at once) an arbitrary script decoded from the
// fuzz input: ticks, proposals, delivery or loss of the cores' own
// messages, restarts from storage, and forged messages with arbitrary
// fields from arbitrary senders. The first byte picks the mode:
//
//   - even: strangers. Every forged message is from a non-member, or
//     names this node wrongly, or has a round or an index out of range,
//     so the core must drop it (the drop counter says so) and the cluster
//     must still agree: one value per index across all cores, and a value
//     a core handed out never changes, across restarts too.
//   - odd: members. Forged messages may claim any sender, members
//     included; without authentication they can break agreement (that is
//     mTLS's job), but never the invariants each core keeps for itself.
//
// Always: no panic; a core's promise never decreases (in memory and in
// storage, across restarts); no round above MaxRound and no index above
// MaxIndex is persisted; no instance is stored beyond chosen +
// MaxIndexAhead; maxRound <= MaxRound; applied <= chosen with every index
// between held and chosen; applied only grows, one index at a time.
func FuzzCoreStep(f *testing.F) {
	for _, seed := range coreFuzzSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		runCoreScript(t, b)
	})
}

// coreFuzzSeeds are hand-written scripts: the bricking Prepare, a leader
// election with traffic, and the other hostile messages of hostile_test.go.
func coreFuzzSeeds() [][]byte {
	var seeds [][]byte
	// warmup: ticks, deliveries and a proposal now and then: a leader is
	// elected and commands are chosen.
	warmup := func(b []byte, rounds int) []byte {
		for i := 0; i < rounds; i++ {
			b = append(b, opTick, byte(i%3))
			if i%5 == 4 {
				b = append(b, opPropose, byte(i%3), 1, byte('a'+i%26))
			}
			for k := 0; k < 6; k++ {
				b = append(b, opDeliver, 0, 0)
			}
		}
		return b
	}
	// Elect a leader, propose, deliver everything, restart node 2.
	honest := warmup([]byte{0}, 30)
	honest = append(honest, opPropose, 0, 1, 'a', opPropose, 1, 1, 'b')
	honest = warmup(honest, 10)
	honest = append(honest, opRestart, 1)
	honest = warmup(honest, 10)
	seeds = append(seeds, honest)
	// The bricking packet: Prepare round MaxUint64 from "node 2", then
	// ticks so the victim would campaign, and a restart.
	brick := warmup([]byte{1}, 30)
	brick = append(brick, opForge, 0)
	brick = appendForge(brick, forged{typ: byte(MsgPrepare), from: 2, round: math.MaxUint64, bnode: 2, index: 1})
	brick = append(brick, opRestart, 0)
	brick = warmup(brick, 30)
	seeds = append(seeds, brick)
	// Huge indexes, a stranger, sender 0, an unknown type, a Snapshot at
	// MaxUint64, a Promise with a far entry, a Prepare at MaxRound.
	for _, fm := range []forged{
		{typ: byte(MsgAccept), from: 2, round: 5, bnode: 2, entries: 1, eindex: math.MaxUint64},
		{typ: byte(MsgAccept), from: 2, round: 5, bnode: 2, entries: 1, eindex: 1 << 40},
		{typ: byte(MsgPrepare), from: 77, round: 9, bnode: 77},
		{typ: byte(MsgAccept), from: 0, round: 9},
		{typ: 200, from: 2},
		{typ: byte(MsgSnapshot), from: 3, index: math.MaxUint64, snapshot: true},
		{typ: byte(MsgLearn), from: 3, chosen: math.MaxUint64, entries: 1, eindex: 1},
		{typ: byte(MsgPromise), from: 3, round: 1, bnode: 1, chosen: 0, entries: 1, eindex: 1 << 50},
		{typ: byte(MsgPrepare), from: 2, round: MaxRound, bnode: 2, index: 1},
	} {
		s := warmup([]byte{1}, 30)
		s = append(s, opForge, 0)
		s = appendForge(s, fm)
		s = append(s, opRestart, 0)
		s = warmup(s, 20)
		seeds = append(seeds, s)
	}
	return seeds
}

const (
	opTick = iota
	opDeliver
	opDropMsg
	opPropose
	opRestart
	opForge
	numOps
)

// forged is the hand-written form of a forged message, for the seeds.
type forged struct {
	typ                   byte
	from                  uint32
	round                 uint64
	bnode                 uint32
	index, chosen, eindex uint64
	entries               byte
	snapshot              bool
}

// appendForge encodes fm the way script.forge decodes it.
func appendForge(b []byte, fm forged) []byte {
	b = append(b, fm.typ)
	b = binary.BigEndian.AppendUint32(append(b, 0xff), fm.from)
	b = append(b, 0xff)
	b = binary.BigEndian.AppendUint64(b, fm.round)
	b = binary.BigEndian.AppendUint32(append(b, 0xff), fm.bnode)
	b = append(b, 0xff)
	b = binary.BigEndian.AppendUint64(b, fm.index)
	b = append(b, 0xff)
	b = binary.BigEndian.AppendUint64(b, fm.chosen)
	flags := byte(0)
	if fm.snapshot {
		flags |= 8
	}
	b = append(b, flags, fm.entries)
	for i := byte(0); i < fm.entries; i++ {
		b = append(b, 0xff)
		b = binary.BigEndian.AppendUint64(b, fm.eindex)
		b = append(b, 0, 0) // ballot: the message's; value: valid, empty
	}
	return append(b, 0, 0) // no indexes, no commands
}

// script reads the fuzz input; past its end every read is zero.
type script struct{ b []byte }

func (s *script) byte() byte {
	if len(s.b) == 0 {
		return 0
	}
	v := s.b[0]
	s.b = s.b[1:]
	return v
}

func (s *script) bytes(n int) []byte {
	n = min(n, len(s.b))
	v := s.b[:n]
	s.b = s.b[n:]
	return v
}

// u64 reads a selector byte: 0xff is followed by 8 raw bytes; other
// values pick small numbers and the interesting edges.
func (s *script) u64() uint64 {
	switch k := s.byte(); {
	case k == 0xff:
		var buf [8]byte
		copy(buf[:], s.bytes(8))
		return binary.BigEndian.Uint64(buf[:])
	case k == 0xfe:
		return math.MaxUint64
	case k == 0xfd:
		return MaxRound
	case k == 0xfc:
		return MaxRound + 1
	case k == 0xfb:
		return MaxRound - MaxRoundStep
	case k == 0xfa:
		return DefaultMaxIndexAhead + uint64(s.byte())
	default:
		return uint64(k)
	}
}

func (s *script) u32() uint32 {
	switch k := s.byte(); k {
	case 0xff:
		var buf [4]byte
		copy(buf[:], s.bytes(4))
		return binary.BigEndian.Uint32(buf[:])
	case 0xfe:
		return math.MaxUint32
	default:
		return uint32(k)
	}
}

// value reads a value: mostly well-formed, sometimes raw bytes.
func (s *script) value() []byte {
	switch k := s.byte(); {
	case k == 0:
		return nil
	case k < 0x80:
		return testValue(string(s.bytes(int(k))))
	default:
		return append([]byte(nil), s.bytes(int(k-0x80))...)
	}
}

func (s *script) forge() Message {
	m := Message{Type: MsgType(s.byte())}
	m.From = s.u32()
	m.Ballot = Ballot{Round: s.u64(), Node: s.u32()}
	m.Index = s.u64()
	m.Chosen = s.u64()
	flags := s.byte()
	m.Reject, m.Probe, m.NoVote = flags&1 != 0, flags&2 != 0, flags&4 != 0
	if flags&8 != 0 {
		// A snapshot: a real engine header, or garbage.
		if flags&16 == 0 {
			a := newApplier(&listSM{})
			m.Snapshot, _ = a.snapshot()
		} else {
			m.Snapshot = append([]byte("PXS1"), s.bytes(int(s.byte()%16))...)
		}
	}
	if flags&32 != 0 {
		m.Promised = Ballot{Round: s.u64(), Node: s.u32()}
	}
	if flags&64 != 0 {
		if flags&128 != 0 {
			m.Meta = append([]byte("PXM1"), s.bytes(int(s.byte()%32))...)
		} else {
			ms := []Member{{ID: 1, Addr: "a"}, {ID: 2, Addr: "b"}, {ID: 3, Addr: "c"}}
			for k := s.byte() % 4; k > 0; k-- {
				ms = append(ms, Member{ID: s.u32(), Addr: "x"})
			}
			m.Meta = (&history{items: []Membership{{Index: 0, Active: 1, Members: ms}}}).encode()
		}
	}
	for k := s.byte() % 8; k > 0; k-- {
		e := Entry{Index: s.u64()}
		if r := s.u64(); r != 0 {
			e.Ballot = Ballot{Round: r, Node: s.u32()}
		} else {
			e.Ballot = m.Ballot
		}
		e.Value = s.value()
		m.Entries = append(m.Entries, e)
	}
	for k := s.byte() % 8; k > 0; k-- {
		m.Indexes = append(m.Indexes, s.u64())
	}
	for k := s.byte() % 4; k > 0; k-- {
		m.Cmds = append(m.Cmds, s.value())
	}
	return m
}

type fuzzNode struct {
	id       uint32
	st       *MemoryStorage
	meta     []byte
	c        *core
	promised Ballot            // highest promise seen, in memory or storage
	handed   map[uint64][]byte // index -> value this node handed out
	applied  uint64            // highest index handed out (or installed)
	restarts int
}

type coreCluster struct {
	t        *testing.T
	strict   bool // strangers mode: forged messages must all be dropped
	nodes    []*fuzzNode
	outbox   []Message
	chosen   map[uint64][]byte // strangers mode: agreement across nodes
	installs int
}

func (cl *coreCluster) cfg(n *fuzzNode) coreConfig {
	return coreConfig{ID: n.id, Peers: []uint32{1, 2, 3}, Meta: n.meta,
		ElectionTicks: 3, HeartbeatTicks: 1, RetransmitTicks: 2, RetryTicks: 6, Window: 4,
		BatchMaxBytes: 64, FetchMaxBytes: 128, Thrifty: n.restarts%2 == 1,
		Seed: int64(n.id)*100 + int64(n.restarts), SeqStart: uint64(n.restarts) << 32}
}

func (cl *coreCluster) start(n *fuzzNode) {
	hs := n.st.HardState()
	var acc []wal.Accepted
	if last := n.st.LastIndex(); last > hs.Applied {
		var err error
		if acc, err = n.st.Range(hs.Applied+1, last, 1<<30); err != nil {
			cl.t.Fatal(err)
		}
	}
	n.c = newCore(cl.cfg(n), hs, acc, n.st)
	n.applied = hs.Applied
	cl.process(n)
}

func (cl *coreCluster) restart(n *fuzzNode) {
	// What the core held but had not handed out is lost, as in a crash:
	// every Ready was saved as soon as it was made.
	n.restarts++
	cl.start(n)
}

// process takes a node's Ready, saves it at once (the driver's order:
// install, meta, update) and checks the invariants.
func (cl *coreCluster) process(n *fuzzNode) {
	t := cl.t
	c := n.c
	rd := c.ready()
	if rd.Install != nil {
		cl.installs++
		if rd.Install.Index > MaxIndex {
			t.Fatalf("node %d: installs a snapshot at %d", n.id, rd.Install.Index)
		}
		if err := n.st.InstallSnapshot(rd.Install.Index, rd.Install.Data); err != nil {
			t.Fatal(err)
		}
		if rd.Install.Index > n.applied {
			n.applied = rd.Install.Index
		}
	}
	if rd.Meta != nil {
		n.meta = rd.Meta
	}
	u := rd.Update
	if u.Promised != nil && (u.Promised.Round > MaxRound || u.Promised.Less(n.promised)) {
		t.Fatalf("node %d: persists promise %v (had %v, max round %d)", n.id, *u.Promised, n.promised, MaxRound)
	}
	for _, a := range u.Accepted {
		if a.Index == 0 || a.Index > MaxIndex || a.Ballot.Round > MaxRound || a.Index > c.chosen+c.lim.ahead {
			t.Fatalf("node %d: persists instance %d ballot %v (chosen %d)", n.id, a.Index, a.Ballot, c.chosen)
		}
	}
	if u.Chosen > MaxIndex {
		t.Fatalf("node %d: persists chosen %d", n.id, u.Chosen)
	}
	if err := n.st.Save(u); err != nil {
		t.Fatal(err)
	}
	if hs := n.st.HardState(); hs.Promised.Less(n.promised) {
		t.Fatalf("node %d: stored promise %v below %v", n.id, hs.Promised, n.promised)
	} else {
		n.promised = hs.Promised
	}
	if c.promised.Less(n.promised) {
		t.Fatalf("node %d: core promise %v below the stored %v", n.id, c.promised, n.promised)
	}
	for _, e := range rd.Committed {
		if e.Index != n.applied+1 {
			t.Fatalf("node %d: hands out %d after %d", n.id, e.Index, n.applied)
		}
		n.applied = e.Index
		if cl.strict {
			if v, ok := n.handed[e.Index]; ok && !bytes.Equal(v, e.Value) {
				t.Fatalf("node %d: index %d handed out as %x, then %x", n.id, e.Index, v, e.Value)
			}
			if v, ok := cl.chosen[e.Index]; ok && !bytes.Equal(v, e.Value) {
				t.Fatalf("index %d chosen twice: %x vs %x (node %d)", e.Index, v, e.Value, n.id)
			}
			cl.chosen[e.Index] = e.Value
		}
		n.handed[e.Index] = e.Value
	}
	if c.maxRound > MaxRound {
		t.Fatalf("node %d: maxRound %d", n.id, c.maxRound)
	}
	if c.applied > c.chosen {
		t.Fatalf("node %d: applied %d > chosen %d", n.id, c.applied, c.chosen)
	}
	for i := c.applied + 1; i <= c.chosen && i <= c.applied+1024; i++ {
		if in := c.log[i]; in == nil || !in.chosen {
			t.Fatalf("node %d: index %d <= chosen %d not held as chosen", n.id, i, c.chosen)
		}
	}
	cl.outbox = append(cl.outbox, rd.Early...)
	cl.outbox = append(cl.outbox, rd.Messages...)
	if len(cl.outbox) > 512 {
		cl.outbox = cl.outbox[len(cl.outbox)-512:]
	}
}

// mustDrop makes a forged message one the core must drop (strangers
// mode), keeping the fuzzer's other choices.
func mustDrop(m *Message, to uint32, how byte) {
	switch how % 5 {
	case 0:
		m.From = 4 + m.From%1000 // a stranger
	case 1:
		m.From = 0
	case 2:
		m.From = to // itself
	case 3:
		m.Ballot.Round = MaxRound + 1 + m.Ballot.Round%7
	case 4:
		m.Chosen = MaxIndex + 1 + m.Chosen%7
	}
}

func runCoreScript(t *testing.T, b []byte) *coreCluster {
	s := &script{b: b}
	cl := &coreCluster{t: t, strict: s.byte()%2 == 0, chosen: map[uint64][]byte{}}
	for id := uint32(1); id <= 3; id++ {
		n := &fuzzNode{id: id, st: NewMemoryStorage(), handed: map[uint64][]byte{}}
		cl.nodes = append(cl.nodes, n)
		cl.start(n)
	}
	for steps := 0; len(s.b) > 0 && steps < 2000; steps++ {
		op := s.byte() % numOps
		n := cl.nodes[s.byte()%3]
		switch op {
		case opTick:
			n.c.tickOnce()
		case opDeliver, opDropMsg:
			k := int(s.byte())
			if len(cl.outbox) == 0 {
				continue
			}
			k %= len(cl.outbox)
			m := cl.outbox[k]
			cl.outbox = append(cl.outbox[:k], cl.outbox[k+1:]...)
			if op == opDropMsg || m.To < 1 || m.To > 3 {
				continue
			}
			n = cl.nodes[m.To-1]
			n.c.step(m)
		case opPropose:
			n.c.propose(s.bytes(int(s.byte()%16)), 0)
		case opRestart:
			cl.restart(n)
			continue
		case opForge:
			m := s.forge()
			m.To = n.id
			if cl.strict {
				mustDrop(&m, n.id, s.byte())
			}
			before := n.c.dropped
			n.c.step(m)
			if cl.strict && n.c.dropped == before {
				t.Fatalf("node %d stepped a message it must drop: %v", n.id, m)
			}
		}
		cl.process(n)
	}
	return cl
}

// TestCoreFuzzSeeds runs the hand-written seeds by name (the fuzz target
// runs them too, with the stored corpus), so a failure names its scenario.
func TestCoreFuzzSeeds(t *testing.T) {
	for i, seed := range coreFuzzSeeds() {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			cl := runCoreScript(t, seed)
			var handed int
			for _, n := range cl.nodes {
				handed += len(n.handed)
			}
			// Every script elects a leader and has commands chosen.
			if handed == 0 {
				t.Fatalf("nothing was chosen: the script does not reach the protocol")
			}
		})
	}
}
