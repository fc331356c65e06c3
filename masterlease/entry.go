package masterlease

import (
	"fmt"
	"hash/crc32"

	"google.golang.org/protobuf/proto"

	pb "phxgo/proto"
)

// EncodingVersion is the newest LogEntry encoding this binary writes and
// understands. Entries with a higher version are rejected with
// ReasonUnknownVersion (deterministically on every node of this version).
const EncodingVersion = 1

// Kind is the type of a log entry.
type Kind uint8

const (
	KindUnknown Kind = iota // undecodable entry
	KindNoop
	KindLease
	KindFence
	KindBatch
)

func (k Kind) String() string {
	switch k {
	case KindNoop:
		return "noop"
	case KindLease:
		return "lease_request"
	case KindFence:
		return "fence"
	case KindBatch:
		return "binlog_batch"
	}
	return "unknown"
}

// LeaseRequest asks for the lease for Candidate; see the package doc.
type LeaseRequest struct {
	Candidate   uint32
	SeenVersion uint64
	Renew       bool
}

// Fence ends term Epoch. From is the proposing node.
type Fence struct {
	Epoch uint64
	From  uint32
}

// Batch is a BinlogBatch entry: raw binlog events of whole transactions, or
// one fragment of a single transaction (see proto/entry.proto).
type Batch struct {
	Epoch     uint64
	Prev      GTID // must equal the last valid GTID
	Last      GTID // last transaction with events in this entry
	Events    []byte
	Checksum  uint32 // CRC32C of Events; EncodeBatch fills it when 0
	TxnCount  uint32 // transactions completed by this entry
	More      bool   // ends inside transaction Last
	Continued bool   // starts inside the partial transaction Last
	Offset    uint64 // byte offset of Events within a split transaction
}

// Entry is a decoded log entry; exactly the field of its Kind is set.
type Entry struct {
	Kind  Kind
	Lease LeaseRequest
	Fence Fence
	Batch Batch
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum is the CRC32C a batch carries for its events.
func Checksum(events []byte) uint32 { return crc32.Checksum(events, castagnoli) }

func marshal(e *pb.LogEntry) []byte {
	e.Version = EncodingVersion
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(e)
	if err != nil {
		// Marshalling a well-formed message in memory cannot fail.
		panic(fmt.Sprintf("masterlease: marshal entry: %v", err))
	}
	return b
}

// EncodeNoop encodes a Noop entry.
func EncodeNoop() []byte {
	return marshal(&pb.LogEntry{Kind: &pb.LogEntry_Noop{Noop: &pb.EntryNoop{}}})
}

// EncodeLeaseRequest encodes a LeaseRequest entry.
func EncodeLeaseRequest(r LeaseRequest) []byte {
	return marshal(&pb.LogEntry{Kind: &pb.LogEntry_LeaseRequest{LeaseRequest: &pb.EntryLeaseRequest{
		Candidate: r.Candidate, SeenVersion: r.SeenVersion, Renew: r.Renew,
	}}})
}

// EncodeFence encodes a Fence entry.
func EncodeFence(f Fence) []byte {
	return marshal(&pb.LogEntry{Kind: &pb.LogEntry_Fence{Fence: &pb.EntryFence{Epoch: f.Epoch, From: f.From}}})
}

// EncodeBatch encodes a BinlogBatch entry, computing the checksum when
// b.Checksum is 0.
func EncodeBatch(b Batch) []byte {
	sum := b.Checksum
	if sum == 0 {
		sum = Checksum(b.Events)
	}
	return marshal(&pb.LogEntry{Kind: &pb.LogEntry_BinlogBatch{BinlogBatch: &pb.EntryBinlogBatch{
		Epoch: b.Epoch, PrevGtid: b.Prev.toPB(), LastGtid: b.Last.toPB(), Events: b.Events,
		Checksum: sum, TxnCount: b.TxnCount, More: b.More, Continued: b.Continued, Offset: b.Offset,
	}}})
}

// Decode decodes a log entry. Errors wrap ErrMalformed or ErrUnknownVersion.
// Decode checks the encoding only; the rules are checked by Step.
func Decode(cmd []byte) (Entry, error) {
	if e, ok := decodeBatch(cmd); ok {
		return e, nil
	}
	return decodeProto(cmd)
}

// decodeProto is Decode through proto.Unmarshal, for every entry.
func decodeProto(cmd []byte) (Entry, error) {
	var m pb.LogEntry
	if err := proto.Unmarshal(cmd, &m); err != nil {
		return Entry{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	switch {
	case m.Version == 0:
		return Entry{}, fmt.Errorf("%w: missing encoding version", ErrMalformed)
	case m.Version > EncodingVersion:
		return Entry{}, fmt.Errorf("%w: entry has version %d, this node knows up to %d",
			ErrUnknownVersion, m.Version, EncodingVersion)
	}
	switch k := m.Kind.(type) {
	case *pb.LogEntry_Noop:
		return Entry{Kind: KindNoop}, nil
	case *pb.LogEntry_LeaseRequest:
		r := k.LeaseRequest
		if r.GetCandidate() == 0 {
			return Entry{}, fmt.Errorf("%w: lease request without candidate", ErrMalformed)
		}
		return Entry{Kind: KindLease, Lease: LeaseRequest{
			Candidate: r.GetCandidate(), SeenVersion: r.GetSeenVersion(), Renew: r.GetRenew(),
		}}, nil
	case *pb.LogEntry_Fence:
		return Entry{Kind: KindFence, Fence: Fence{Epoch: k.Fence.GetEpoch(), From: k.Fence.GetFrom()}}, nil
	case *pb.LogEntry_BinlogBatch:
		b := k.BinlogBatch
		return Entry{Kind: KindBatch, Batch: Batch{
			Epoch: b.GetEpoch(), Prev: gtidFromPB(b.GetPrevGtid()), Last: gtidFromPB(b.GetLastGtid()),
			Events: b.GetEvents(), Checksum: b.GetChecksum(), TxnCount: b.GetTxnCount(),
			More: b.GetMore(), Continued: b.GetContinued(), Offset: b.GetOffset(),
		}}, nil
	}
	return Entry{}, fmt.Errorf("%w: entry of no known kind", ErrMalformed)
}
