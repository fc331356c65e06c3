package paxos

import pb "phxgo/proto"

// Conversion between Message and its protobuf form.

func ballotToProto(b Ballot) *pb.PaxosBallot {
	if b.IsZero() {
		return nil
	}
	return &pb.PaxosBallot{Round: b.Round, Node: b.Node}
}

func ballotFromProto(b *pb.PaxosBallot) Ballot {
	if b == nil {
		return Ballot{}
	}
	return Ballot{Round: b.Round, Node: b.Node}
}

func messageToProto(m *Message) *pb.PaxosMessage {
	out := &pb.PaxosMessage{
		Type: uint32(m.Type), From: m.From, To: m.To,
		Ballot: ballotToProto(m.Ballot), Index: m.Index, Chosen: m.Chosen,
		Reject: m.Reject, Probe: m.Probe, NoVote: m.NoVote, Promised: ballotToProto(m.Promised),
		Indexes: m.Indexes, Cmds: m.Cmds, Snapshot: m.Snapshot, Meta: m.Meta,
	}
	if len(m.Entries) > 0 {
		out.Entries = make([]*pb.PaxosEntry, len(m.Entries))
		for i, e := range m.Entries {
			out.Entries[i] = &pb.PaxosEntry{Index: e.Index, Ballot: ballotToProto(e.Ballot), Value: e.Value}
		}
	}
	for i := range m.Digests {
		d := &m.Digests[i]
		out.Digests = append(out.Digests, &pb.PaxosDigest{First: d.First, Last: d.Last, Sum: d.Sum[:]})
	}
	return out
}

// messageFromProto converts and checks the parts the core relies on.
func messageFromProto(p *pb.PaxosMessage) (Message, bool) {
	if p.Type == 0 || p.Type > uint32(MsgDigests) {
		return Message{}, false
	}
	m := Message{
		Type: MsgType(p.Type), From: p.From, To: p.To,
		Ballot: ballotFromProto(p.Ballot), Index: p.Index, Chosen: p.Chosen,
		Reject: p.Reject, Probe: p.Probe, NoVote: p.NoVote, Promised: ballotFromProto(p.Promised),
		Indexes: p.Indexes, Cmds: p.Cmds, Snapshot: p.Snapshot, Meta: p.Meta,
	}
	if len(p.Entries) > 0 {
		m.Entries = make([]Entry, len(p.Entries))
		for i, e := range p.Entries {
			m.Entries[i] = Entry{Index: e.Index, Ballot: ballotFromProto(e.Ballot), Value: e.Value}
		}
	}
	m.Digests = digestsFromProto(p.Digests)
	return m, true
}

// messageSize approximates the wire size of m, for splitting batches.
func messageSize(m *Message) int {
	n := 64 + 8*len(m.Indexes) + len(m.Meta)
	for _, e := range m.Entries {
		n += len(e.Value) + 32
	}
	n += len(m.Snapshot) + 56*len(m.Digests)
	for _, c := range m.Cmds {
		n += len(c) + 8
	}
	return n
}

// digestsFromProto converts a message's digests; a list that is too long
// or holds a malformed digest is dropped whole (digests are advisory:
// the message itself still counts).
func digestsFromProto(ps []*pb.PaxosDigest) []RangeDigest {
	if len(ps) == 0 || len(ps) > maxDigestsPerMessage {
		return nil
	}
	out := make([]RangeDigest, len(ps))
	for i, p := range ps {
		if len(p.Sum) != len(out[i].Sum) {
			return nil
		}
		out[i].First, out[i].Last = p.First, p.Last
		copy(out[i].Sum[:], p.Sum)
	}
	return out
}
