package replserver

import (
	"context"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"phxgo/binlogd/binlog"
)

// TestGoMySQLClientReadsStream: a second, independent client (go-mysql's
// BinlogSyncer, MariaDB flavor, CRC verification on, checksum 'NONE' for
// artificial events) reads the stream from a GTID position and sees every
// later transaction in order, then a heartbeat.
func TestGoMySQLClientReadsStream(t *testing.T) {
	src := NewMemorySource(0)
	var want []binlog.GTID
	for i := uint64(1); i <= 20; i++ {
		g := binlog.GTID{Domain: 0, Server: 1, Seq: i}
		if err := src.Append(gtidOnlyTxn(g)); err != nil {
			t.Fatal(err)
		}
		if i > 5 {
			want = append(want, g)
		}
	}
	srv := startEndpoint(t, src, "127.0.0.1:0", 200*time.Millisecond)
	host, port, err := splitHostPort(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	s := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{ServerID: 55, Flavor: "mariadb", Host: host, Port: port,
		User: testUser, Password: testPassword, VerifyChecksum: true, HeartbeatPeriod: 200 * time.Millisecond})
	defer s.Close()
	gs, err := mysql.ParseMariadbGTIDSet("0-1-5")
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.StartSyncGTID(gs)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []binlog.GTID
	sawFDE, sawList := false, false
	for {
		e, err := st.GetEvent(ctx)
		if err != nil {
			t.Fatalf("after %d GTIDs: %v", len(got), err)
		}
		switch ev := e.Event.(type) {
		case *replication.FormatDescriptionEvent:
			sawFDE = ev.ChecksumAlgorithm == replication.BINLOG_CHECKSUM_ALG_CRC32
		case *replication.MariadbGTIDListEvent:
			sawList = len(ev.GTIDs) == 1 && ev.GTIDs[0].SequenceNumber == 5
		case *replication.MariadbGTIDEvent:
			got = append(got, binlog.GTID{Domain: ev.GTID.DomainID, Server: ev.GTID.ServerID, Seq: ev.GTID.SequenceNumber})
		}
		if e.Header.EventType == replication.HEARTBEAT_EVENT {
			break
		}
	}
	if !sawFDE || !sawList {
		t.Fatalf("FDE with CRC32 %v, GTID_LIST 0-1-5 %v", sawFDE, sawList)
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

// gtidOnlyTxn is a MariaDB GTID event (standalone flag) followed by a
// QUERY-less filler: enough framing for clients that parse GTIDs.
func gtidOnlyTxn(g binlog.GTID) binlog.Txn {
	ev := make([]byte, binlog.HeaderLen+19+checksumLen)
	putHeader(ev, 1700000000, 162, g.Server, 0, 0)
	b := ev[binlog.HeaderLen:]
	b[0] = byte(g.Seq)
	b[8], b[9], b[10], b[11] = byte(g.Domain), byte(g.Domain>>8), byte(g.Domain>>16), byte(g.Domain>>24)
	b[12] = 1 // FL_STANDALONE
	sealCRC(ev)
	return binlog.Txn{GTID: g, Events: ev}
}
