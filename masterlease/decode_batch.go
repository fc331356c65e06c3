package masterlease

import "google.golang.org/protobuf/encoding/protowire"

// decodeBatch decodes the common entry, a well-formed BinlogBatch of the
// current encoding version, without copying its events: Batch.Events
// aliases cmd (capacity cut to its length, so an append copies). Why:
// proto.Unmarshal copies the events of every entry, and each node decodes
// every entry at least twice (its applier and its log readers); that was
// a few percent of a replica binlogd's CPU (issue 19). ok is false for
// anything else (another kind, an unknown or repeated field, bad wire
// data), which the caller leaves to proto.Unmarshal, so the result is
// always what Decode would give.
func decodeBatch(cmd []byte) (e Entry, ok bool) {
	var version uint64
	var batch []byte
	var seen uint8
	for b := cmd; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return Entry{}, false
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.VarintType && seen&1 == 0:
			version, n = protowire.ConsumeVarint(b)
			seen |= 1
		case num == 5 && typ == protowire.BytesType && seen&2 == 0:
			batch, n = protowire.ConsumeBytes(b)
			seen |= 2
		default:
			return Entry{}, false
		}
		if n < 0 {
			return Entry{}, false
		}
		b = b[n:]
	}
	if seen != 3 || uint32(version) == 0 || uint32(version) > EncodingVersion {
		return Entry{}, false
	}
	var out Batch
	var fields uint16
	for b := batch; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num < 1 || num > 9 || fields&(1<<num) != 0 {
			return Entry{}, false
		}
		fields |= 1 << num
		b = b[n:]
		want := protowire.VarintType
		switch num {
		case 2, 3, 4:
			want = protowire.BytesType
		case 5:
			want = protowire.Fixed32Type
		}
		if typ != want {
			return Entry{}, false
		}
		var v uint64
		var raw []byte
		switch typ {
		case protowire.VarintType:
			v, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var x uint32
			x, n = protowire.ConsumeFixed32(b)
			v = uint64(x)
		default:
			raw, n = protowire.ConsumeBytes(b)
		}
		if n < 0 {
			return Entry{}, false
		}
		b = b[n:]
		switch num {
		case 1:
			out.Epoch = v
		case 2, 3:
			g, ok := decodeGTID(raw)
			if !ok {
				return Entry{}, false
			}
			if num == 2 {
				out.Prev = g
			} else {
				out.Last = g
			}
		case 4:
			if len(raw) > 0 {
				out.Events = raw[:len(raw):len(raw)]
			}
		case 5:
			out.Checksum = uint32(v)
		case 6:
			out.TxnCount = uint32(v)
		case 7:
			out.More = v != 0
		case 8:
			out.Continued = v != 0
		case 9:
			out.Offset = v
		}
	}
	return Entry{Kind: KindBatch, Batch: out}, true
}

// decodeGTID decodes a Gtid message with each field at most once.
func decodeGTID(b []byte) (GTID, bool) {
	var g GTID
	var seen uint8
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.VarintType || num < 1 || num > 3 || seen&(1<<num) != 0 {
			return GTID{}, false
		}
		seen |= 1 << num
		b = b[n:]
		v, m := protowire.ConsumeVarint(b)
		if m < 0 {
			return GTID{}, false
		}
		b = b[m:]
		switch num {
		case 1:
			g.Domain = uint32(v)
		case 2:
			g.Server = uint32(v)
		case 3:
			g.Seq = v
		}
	}
	return g, true
}
