package capture

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
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
	maxPacketChunk  = 1<<24 - 1
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
	e := &mysql.MyError{}
	if len(p) >= 3 {
		e.Code = binary.LittleEndian.Uint16(p[1:])
		rest := p[3:]
		if len(rest) >= 6 && rest[0] == '#' {
			e.State = string(rest[1:6])
			rest = rest[6:]
		}
		e.Message = string(rest)
	}
	return e
}

// encodeAck returns the whole ACK packet, header included.
func encodeAck(pos Position) []byte {
	n := 1 + 8 + len(pos.File)
	b := make([]byte, 4+n)
	b[0], b[1], b[2], b[3] = byte(n), byte(n>>8), byte(n>>16), 0
	b[4] = semiSyncMagic
	binary.LittleEndian.PutUint64(b[5:], pos.Pos)
	copy(b[13:], pos.File)
	return b
}

// decodeAck is encodeAck's inverse (tests and fuzzing).
func decodeAck(b []byte) (Position, error) {
	if len(b) < 13 || b[4] != semiSyncMagic || int(b[0])|int(b[1])<<8|int(b[2])<<16 != len(b)-4 {
		return Position{}, fmt.Errorf("%w: bad ACK packet", ErrProtocol)
	}
	return Position{File: string(b[13:]), Pos: binary.LittleEndian.Uint64(b[5:])}, nil
}

// packetReader reads MySQL packets from the dump connection, joining
// 16 MB continuation chunks, without sequence checks (see above).
type packetReader struct {
	conn    net.Conn
	r       *bufio.Reader
	timeout time.Duration
	max     int
	hdr     [4]byte
}

func newPacketReader(conn net.Conn, timeout time.Duration, max int) *packetReader {
	return &packetReader{conn: conn, r: bufio.NewReaderSize(conn, 256<<10), timeout: timeout, max: max}
}

func (r *packetReader) next() ([]byte, error) {
	var out []byte
	for {
		if r.timeout > 0 {
			if err := r.conn.SetReadDeadline(time.Now().Add(r.timeout)); err != nil {
				return nil, err
			}
		}
		if _, err := io.ReadFull(r.r, r.hdr[:]); err != nil {
			return nil, err
		}
		n := int(r.hdr[0]) | int(r.hdr[1])<<8 | int(r.hdr[2])<<16
		if len(out)+n > r.max {
			return nil, fmt.Errorf("%w: packet over %d bytes", ErrProtocol, r.max)
		}
		start := len(out)
		out = append(out, make([]byte, n)...)
		if _, err := io.ReadFull(r.r, out[start:]); err != nil {
			return nil, err
		}
		if n < maxPacketChunk {
			return out, nil
		}
	}
}
