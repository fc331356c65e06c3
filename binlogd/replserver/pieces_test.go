package replserver

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"net"
	"testing"
	"time"

	"phxgo/binlogd/binlog"
)

// bufConn is a net.Conn that keeps what is written.
type bufConn struct {
	net.Conn
	buf bytes.Buffer
}

func (c *bufConn) Write(b []byte) (int, error)      { return c.buf.Write(b) }
func (c *bufConn) SetWriteDeadline(time.Time) error { return nil }

func crcEvent(typ byte, n int, fill byte) []byte {
	ev := bytes.Repeat([]byte{fill}, n)
	ev[4] = typ
	binary.LittleEndian.PutUint32(ev[eventSizeOffset:], uint32(n))
	binary.LittleEndian.PutUint32(ev[n-checksumLen:], crc32.ChecksumIEEE(ev[:n-checksumLen]))
	return ev
}

// TestStreamSendsPieces: a transaction sent in pieces (a split
// transaction the cursor hands on as the log holds it) puts exactly the
// bytes on the wire that sending it whole does, and the position moves
// past it only with its last piece; a piece out of order is refused.
func TestStreamSendsPieces(t *testing.T) {
	g := binlog.GTID{Server: 1, Seq: 7}
	gev := crcEvent(binlog.EventMariaGTID, binlog.HeaderLen+13+checksumLen, 0)
	evs := [][]byte{gev, crcEvent(19, 40, 1), crcEvent(23, 300, 2), crcEvent(23, 200, 3), crcEvent(evXID, 31, 4)}
	whole := bytes.Join(evs, nil)
	send := func(txns ...binlog.Txn) (*stream, []byte, error) {
		c := &bufConn{}
		st := &stream{w: newPacketWriter(c, 1, time.Second), serverID: 9, fileNo: 1, pos: binlogStart, rotateAt: defaultRotateAt}
		for _, tx := range txns {
			if err := st.txn(tx); err != nil {
				return st, nil, err
			}
		}
		if err := st.w.flush(); err != nil {
			t.Fatal(err)
		}
		return st, c.buf.Bytes(), nil
	}
	_, want, err := send(binlog.Txn{GTID: g, Events: whole})
	if err != nil {
		t.Fatal(err)
	}
	a, b := len(gev)+40, len(gev)+40+300+200
	st, got, err := send(binlog.Txn{GTID: g, Events: whole[:a], More: true},
		binlog.Txn{GTID: g, Events: whole[a:b], More: true, Offset: uint64(a)},
		binlog.Txn{GTID: g, Events: whole[b:], Offset: uint64(b)})
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("pieces sent %d bytes, whole %d (%v)", len(got), len(want), err)
	}
	if st.last.String() != g.String() || !st.open.IsZero() {
		t.Fatalf("position after the pieces: %s (open %v)", st.last, st.open)
	}
	st, _, _ = send(binlog.Txn{GTID: g, Events: whole[:a], More: true})
	if st.last.String() == g.String() {
		t.Fatal("position moved past a transaction whose end was not sent")
	}
	if _, _, err := send(binlog.Txn{GTID: g, Events: whole[a:b], More: true, Offset: uint64(a)}); !errors.Is(err, ErrBadTxn) {
		t.Fatalf("a continuation with no open transaction: %v", err)
	}
	if _, _, err := send(binlog.Txn{GTID: g, Events: whole[:a], More: true}, binlog.Txn{GTID: binlog.GTID{Server: 1, Seq: 8}, Events: whole}); !errors.Is(err, ErrBadTxn) {
		t.Fatalf("a new transaction while one is open: %v", err)
	}
}
