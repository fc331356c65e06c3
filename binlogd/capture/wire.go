package capture

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"slices"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"phxgo/sqlproxy/wire"
)

// Wire format of the semi-sync binlog stream (MariaDB
// sql/semisync_master.cc, go-mysql replication/binlogsyncer.go):
//
//	event packet:  0x00 | 0xef | flag (0x01 = ACK requested) | event (header..CRC32)
//	ACK packet:    0xef | log_pos uint64 LE | binlog file name (no terminator)
//
// MariaDB resets the packet sequence number after every event that asks
// for an ACK (thd->net.pkt_nr_can_be_reset), so the stream's sequence
// numbers are not checked and the ACK goes out with sequence 0.
const (
	semiSyncMagic   = 0xef
	semiSyncNeedAck = 0x01
)

// Position is a binlog coordinate: the end of an event in a binlog file.
type Position struct {
	File string
	Pos  uint64
}

func (p Position) String() string { return fmt.Sprintf("%s:%d", p.File, p.Pos) }

// less orders positions the way MariaDB does (file name, then offset).
func (p Position) less(q Position) bool {
	if p.File != q.File {
		return p.File < q.File
	}
	return p.Pos < q.Pos
}

// parseDumpPacket splits one COM_BINLOG_DUMP reply payload. An event
// packet yields the raw event and whether the master asked for an ACK;
// an ERR packet yields a *mysql.MyError; EOF yields io.EOF.
func parseDumpPacket(p []byte) (event []byte, needAck bool, err error) {
	if len(p) == 0 {
		return nil, false, fmt.Errorf("%w: empty packet", ErrProtocol)
	}
	switch p[0] {
	case mysql.OK_HEADER:
	case mysql.ERR_HEADER:
		return nil, false, decodeErrPacket(p)
	case mysql.EOF_HEADER:
		if len(p) < 9 {
			return nil, false, io.EOF
		}
		return nil, false, fmt.Errorf("%w: unexpected 0xfe packet of %d bytes", ErrProtocol, len(p))
	default:
		return nil, false, fmt.Errorf("%w: packet header 0x%02x", ErrProtocol, p[0])
	}
	if len(p) < 3 || p[1] != semiSyncMagic {
		// The master decides at dump start whether this replica is
		// semi-sync; without the header it will never wait for us.
		return nil, false, fmt.Errorf("%w: event without semi-sync header (rpl_semi_sync_master_enabled was OFF when capture connected?)", ErrUnsafe)
	}
	if p[2]&^semiSyncNeedAck != 0 {
		return nil, false, fmt.Errorf("%w: semi-sync flag 0x%02x", ErrProtocol, p[2])
	}
	return p[3:], p[2] == semiSyncNeedAck, nil
}

func decodeErrPacket(p []byte) error {
	e := wire.ParseError(p)
	return &mysql.MyError{Code: e.Code, State: e.SQLState, Message: e.Message}
}

// encodeAck returns the whole ACK packet, header included, sequence 0.
func encodeAck(pos Position) []byte {
	p := make([]byte, 0, 1+8+len(pos.File))
	p = append(p, semiSyncMagic)
	p = binary.LittleEndian.AppendUint64(p, pos.Pos)
	p = append(p, pos.File...)
	return wire.AppendPacket(make([]byte, 0, 4+len(p)), 0, p)
}

// decodeAck is encodeAck's inverse (tests and fuzzing).
func decodeAck(b []byte) (Position, error) {
	if len(b) < 13 || b[4] != semiSyncMagic || int(b[0])|int(b[1])<<8|int(b[2])<<16 != len(b)-4 {
		return Position{}, fmt.Errorf("%w: bad ACK packet", ErrProtocol)
	}
	return Position{File: string(b[13:]), Pos: binary.LittleEndian.Uint64(b[5:])}, nil
}

// dumpReader reads the dump stream's packets, joining 16 MB
// continuation frames, without sequence checks (see above), into one
// buffer it reuses: a packet is valid until the next read (the grouper
// copies what it keeps). Each frame header read has at least timeout
// left before its read deadline; the deadline is moved only when less
// than that remains, to timeout plus a slack of timeout/8, instead of
// before every frame (a timer update per event).
type dumpReader struct {
	r        *bufio.Reader
	conn     net.Conn
	timeout  time.Duration
	deadline time.Time
	limit    int
	buf      []byte
}

func newDumpReader(conn net.Conn, timeout time.Duration, max int) *dumpReader {
	return &dumpReader{r: bufio.NewReaderSize(conn, 256<<10), conn: conn, timeout: timeout, limit: max}
}

// readPacket returns the next packet's payload, or wire.ErrTooBig past
// the limit.
func (d *dumpReader) readPacket() ([]byte, error) {
	out := d.buf[:0]
	for {
		if d.timeout > 0 {
			if now := time.Now(); d.deadline.Sub(now) < d.timeout {
				d.deadline = now.Add(d.timeout + d.timeout/8)
				if err := d.conn.SetReadDeadline(d.deadline); err != nil {
					return nil, err
				}
			}
		}
		var hdr [4]byte
		if _, err := io.ReadFull(d.r, hdr[:]); err != nil {
			return nil, err
		}
		n := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
		if d.limit > 0 && len(out)+n > d.limit {
			return nil, wire.ErrTooBig
		}
		// Grown as bytes arrive, not to what the header announces.
		for k := n; k > 0; {
			if len(out) == cap(out) {
				out = slices.Grow(out, min(k, max(cap(out), 16<<10)))
			}
			m := min(k, cap(out)-len(out))
			got, err := io.ReadFull(d.r, out[len(out):len(out)+m])
			out = out[:len(out)+got]
			k -= got
			if err != nil {
				return nil, err
			}
		}
		if n < wire.MaxPayload {
			if cap(out) <= 1<<20 {
				d.buf = out // a big transaction's packet is not kept
			}
			return out, nil
		}
	}
}
