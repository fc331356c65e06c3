package replserver

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"phxgo/binlogd/binlog"
)

// plainSource hides BatchCursor, so the endpoint reads one Next at a time.
type plainSource struct{ Source }

type plainCursor struct{ c Cursor }

func (p plainSource) Open(ctx context.Context, pos binlog.GTIDList) (Cursor, error) {
	c, err := p.Source.Open(ctx, pos)
	if err != nil {
		return nil, err
	}
	return plainCursor{c}, nil
}
func (p plainCursor) Next(ctx context.Context) (binlog.Txn, error) { return p.c.Next(ctx) }
func (p plainCursor) Close() error                                 { return p.c.Close() }

// NextBatch hands over what is ready, at most max, in order, and blocks
// only while nothing is.
func TestMemCursorNextBatch(t *testing.T) {
	src := NewMemorySource(0)
	for i := uint64(1); i <= 10; i++ {
		if err := src.Append(gtidTxn(binlog.GTID{Server: 1, Seq: i})); err != nil {
			t.Fatal(err)
		}
	}
	cur, err := src.Open(ctxT(t), binlog.GTIDList{{Server: 1, Seq: 2}})
	if err != nil {
		t.Fatal(err)
	}
	bc := cur.(BatchCursor)
	b, err := bc.NextBatch(ctxT(t), 4)
	if err != nil || len(b) != 4 || b[0].GTID.Seq != 3 || b[3].GTID.Seq != 6 {
		t.Fatalf("first batch: %d txns, %v", len(b), err)
	}
	if b, err = bc.NextBatch(ctxT(t), 100); err != nil || len(b) != 4 || b[3].GTID.Seq != 10 {
		t.Fatalf("second batch: %d txns, %v", len(b), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := bc.NextBatch(ctx, 100); err != context.DeadlineExceeded {
		t.Fatalf("at the end of the log: %v, want it to wait", err)
	}
}

// A replica gets every transaction once, in order, whether the cursor
// hands over batches (more than one batch's worth is waiting when it
// connects, and more arrives while it streams) or one at a time.
func TestDumpBatchedAndPlainCursors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plain bool
	}{{"batched", false}, {"plain", true}} {
		t.Run(tc.name, func(t *testing.T) {
			src := NewMemorySource(0)
			const before, after = 2*maxBatch + 10, 50
			for i := uint64(1); i <= before; i++ {
				if err := src.Append(gtidTxn(binlog.GTID{Server: 1, Seq: i})); err != nil {
					t.Fatal(err)
				}
			}
			var s Source = src
			if tc.plain {
				s = plainSource{src}
			}
			srv := startEndpoint(t, s, "127.0.0.1:0", time.Second)
			host, port, err := splitHostPort(srv.Addr())
			if err != nil {
				t.Fatal(err)
			}
			sy := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{ServerID: 56, Flavor: "mariadb", Host: host, Port: port,
				User: testUser, Password: testPassword, VerifyChecksum: true, HeartbeatPeriod: time.Second})
			defer sy.Close()
			gs, err := mysql.ParseMariadbGTIDSet("0-1-3")
			if err != nil {
				t.Fatal(err)
			}
			st, err := sy.StartSyncGTID(gs)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			next := uint64(4)
			for next <= before+after {
				if next == before/2 {
					for i := uint64(before + 1); i <= before+after; i++ {
						if err := src.Append(gtidTxn(binlog.GTID{Server: 1, Seq: i})); err != nil {
							t.Fatal(err)
						}
					}
				}
				e, err := st.GetEvent(ctx)
				if err != nil {
					t.Fatalf("waiting for GTID 0-1-%d: %v", next, err)
				}
				if ev, ok := e.Event.(*replication.MariadbGTIDEvent); ok {
					if ev.GTID.SequenceNumber != next {
						t.Fatalf("got GTID seq %d, want %d", ev.GTID.SequenceNumber, next)
					}
					next++
				}
			}
		})
	}
}

// gtidTxn is gtidOnlyTxn with the whole 64-bit sequence number.
func gtidTxn(g binlog.GTID) binlog.Txn {
	t := gtidOnlyTxn(g)
	binary.LittleEndian.PutUint64(t.Events[binlog.HeaderLen:], g.Seq)
	sealCRC(t.Events)
	return t
}
