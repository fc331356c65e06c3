package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"

	"phxgo/binlogd/binlog"
)

// TestDecodeMatchesGoMySQL: decodeEvent reads from a real binlog (DDL,
// multi-statement, MyISAM, XA, rotate) what go-mysql's parser, which
// capture used before, reads: the GTID, the standalone flag and each
// query's text; and both refuse every event with a byte changed (the
// FORMAT_DESCRIPTION aside: go-mysql does not check its CRC32, which
// decodeEvent does).
func TestDecodeMatchesGoMySQL(t *testing.T) {
	file, err := os.ReadFile("testdata/binlog.000001")
	if err != nil {
		t.Fatal(err)
	}
	p := replication.NewBinlogParser()
	p.SetFlavor("mariadb")
	p.SetVerifyChecksum(true)
	p.SetRowsEventDecodeFunc(func(*replication.RowsEvent, []byte) error { return nil })
	fd := false
	seen := map[replication.EventType]int{}
	for i, pkt := range splitFuzzPackets(goldenStream(t, file, false)) {
		ev, _, err := parseDumpPacket(pkt)
		if err != nil {
			t.Fatal(err)
		}
		typ := replication.EventType(ev[4])
		if typ == replication.ROTATE_EVENT || typ == replication.HEARTBEAT_EVENT {
			continue
		}
		want, err := p.Parse(bytes.Clone(ev))
		if err != nil {
			t.Fatalf("event %d: go-mysql: %v", i, err)
		}
		got, err := decodeEvent(ev, fd)
		if err != nil {
			t.Fatalf("event %d (%v): %v", i, typ, err)
		}
		seen[typ]++
		switch v := want.Event.(type) {
		case *replication.FormatDescriptionEvent:
			fd = got.crc32
			if !got.crc32 || v.ChecksumAlgorithm != replication.BINLOG_CHECKSUM_ALG_CRC32 {
				t.Fatalf("event %d: CRC32 %v, go-mysql %v", i, got.crc32, v.ChecksumAlgorithm)
			}
		case *replication.MariadbGTIDEvent:
			g := binlog.GTID{Domain: v.GTID.DomainID, Server: v.GTID.ServerID, Seq: v.GTID.SequenceNumber}
			if got.gtid != g || got.standalone != v.IsStandalone() || got.commitID != v.CommitID {
				t.Fatalf("event %d: %v standalone=%v commit id %d, go-mysql %v %v %d", i, got.gtid, got.standalone, got.commitID, g, v.IsStandalone(), v.CommitID)
			}
		case *replication.QueryEvent:
			if !bytes.Equal(got.query, v.Query) {
				t.Fatalf("event %d: query %q, go-mysql %q", i, got.query, v.Query)
			}
		}
		if typ == replication.FORMAT_DESCRIPTION_EVENT {
			continue
		}
		for _, at := range []int{0, 4, binlog.HeaderLen, len(ev) / 2, len(ev) - 1} {
			bad := bytes.Clone(ev)
			bad[at] ^= 0x40
			if _, err := decodeEvent(bad, true); err == nil {
				t.Fatalf("event %d (%v) with byte %d changed accepted", i, typ, at)
			}
		}
	}
	for _, typ := range []replication.EventType{replication.MARIADB_GTID_EVENT, replication.QUERY_EVENT,
		replication.XID_EVENT, replication.XA_PREPARE_LOG_EVENT, replication.TABLE_MAP_EVENT} {
		if seen[typ] == 0 {
			t.Errorf("the golden binlog has no %v event", typ)
		}
	}
}

// Truncated events with a valid CRC32 are refused with an error, not a
// panic, and so is a QUERY whose status block runs past its end.
func TestDecodeShortEvents(t *testing.T) {
	withCRC := func(ev []byte) []byte {
		n := len(ev) - 4
		binary.LittleEndian.PutUint32(ev[n:], crc32.ChecksumIEEE(ev[:n]))
		return ev
	}
	for typ, min := range map[replication.EventType]int{replication.FORMAT_DESCRIPTION_EVENT: 81,
		replication.MARIADB_GTID_EVENT: 36, replication.XID_EVENT: 31, replication.QUERY_EVENT: 36} {
		for n := binlog.HeaderLen + 4; n < min; n++ {
			ev := make([]byte, n)
			ev[4] = byte(typ)
			if _, err := decodeEvent(withCRC(ev), true); err == nil {
				t.Fatalf("%v of %d bytes accepted", typ, n)
			}
		}
	}
	ev := make([]byte, 60)
	ev[4] = byte(replication.QUERY_EVENT)
	binary.LittleEndian.PutUint16(ev[binlog.HeaderLen+11:], 30) // status vars past the end
	if _, err := decodeEvent(withCRC(ev), true); err == nil {
		t.Fatal("QUERY with status vars past its end accepted")
	}
	if _, err := decodeEvent(make([]byte, binlog.HeaderLen), true); err == nil {
		t.Fatal("event without room for a CRC32 accepted")
	}
}

// TestDecodeGroupCommitID: a GTID event of a group commit of two or
// more carries FL_GROUP_COMMIT_ID and an 8-byte commit id where a lone
// transaction's has 6 zero bytes; decodeEvent reads the id as go-mysql
// does, and refuses a flagged event too short for it.
func TestDecodeGroupCommitID(t *testing.T) {
	gtidEvent := func(flags byte, tail []byte) []byte {
		body := binary.LittleEndian.AppendUint64(nil, 77) // seq_no
		body = binary.LittleEndian.AppendUint32(body, 0)  // domain
		body = append(body, flags)
		body = append(body, tail...)
		ev := make([]byte, binlog.HeaderLen, binlog.HeaderLen+len(body)+4)
		ev[4] = byte(replication.MARIADB_GTID_EVENT)
		binary.LittleEndian.PutUint32(ev[5:], 1) // server id
		ev = append(ev, body...)
		binary.LittleEndian.PutUint32(ev[9:], uint32(len(ev)+4))
		return binary.LittleEndian.AppendUint32(ev, crc32.ChecksumIEEE(ev))
	}
	p := replication.NewBinlogParser()
	p.SetFlavor("mariadb")
	for _, tc := range []struct {
		name string
		ev   []byte
		want uint64
	}{
		{"group commit", gtidEvent(replication.BINLOG_MARIADB_FL_GROUP_COMMIT_ID|replication.BINLOG_MARIADB_FL_TRANSACTIONAL,
			binary.LittleEndian.AppendUint64(nil, 0x0102030405060708)), 0x0102030405060708},
		{"alone", gtidEvent(replication.BINLOG_MARIADB_FL_TRANSACTIONAL, make([]byte, 6)), 0},
	} {
		got, err := decodeEvent(tc.ev, true)
		if err != nil || got.commitID != tc.want || got.gtid.Seq != 77 {
			t.Fatalf("%s: commit id %d (want %d), %v, err %v", tc.name, got.commitID, tc.want, got.gtid, err)
		}
		plain := bytes.Clone(tc.ev[:len(tc.ev)-4]) // go-mysql, told of no checksum here
		binary.LittleEndian.PutUint32(plain[9:], uint32(len(plain)))
		e, err := p.Parse(plain)
		if err != nil {
			t.Fatalf("%s: go-mysql: %v", tc.name, err)
		}
		if v := e.Event.(*replication.MariadbGTIDEvent); v.CommitID != tc.want {
			t.Fatalf("%s: go-mysql commit id %d, want %d", tc.name, v.CommitID, tc.want)
		}
	}
	short := gtidEvent(replication.BINLOG_MARIADB_FL_GROUP_COMMIT_ID, make([]byte, 6))
	if _, err := decodeEvent(short, true); !errors.Is(err, ErrProtocol) {
		t.Fatalf("group commit flag without room for the id: %v", err)
	}
}
