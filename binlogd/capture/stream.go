package capture

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	perrors "github.com/pingcap/errors"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/rawnet"
	"phxgo/sqlproxy/wire"
)

// maxPacket bounds one reassembled packet (MariaDB's max_allowed_packet
// ceiling is 1 GB; a binlog event is never larger).
const maxPacket = 1<<30 + 64

// stream is one semi-sync COM_BINLOG_DUMP connection. The reader
// goroutine owns rd; ACKs are written straight to conn, which is safe
// alongside a concurrent Read.
type stream struct {
	c            *client.Conn
	conn         net.Conn
	rd           *dumpReader
	id           uint32 // server connection id, to KILL a zombie before re-registering
	writeTimeout time.Duration
}

// dialStream connects, registers as a semi-sync replica with server id
// cfg.ServerID, and starts a MariaDB GTID dump right after `after`.
func dialStream(ctx context.Context, cfg Config, after binlog.GTID) (*stream, error) {
	dctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	// The deadline covers the handshake too, which go-mysql reads without one.
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := (&net.Dialer{Timeout: cfg.ConnectTimeout}).DialContext(ctx, network, addr)
		if err == nil {
			_ = conn.SetDeadline(time.Now().Add(cfg.ConnectTimeout))
			conn = rawnet.Wrap(conn) // no sysmon wake-up per dump read or ACK (package rawnet)
		}
		return conn, err
	}
	network := "tcp"
	if strings.Contains(cfg.Addr, "/") {
		network = "unix"
	}
	c, err := client.ConnectWithDialer(dctx, network, cfg.Addr, cfg.User, cfg.Password, "", dial)
	if err != nil {
		return nil, fmt.Errorf("capture: connect %s: %w", cfg.Addr, unwrapMy(err))
	}
	s := &stream{c: c, conn: c.Conn.Conn, id: c.GetConnectionID(), writeTimeout: cfg.ConnectTimeout}
	if err := s.start(cfg, after); err != nil {
		_ = c.Close()
		return nil, err
	}
	return s, nil
}

func (s *stream) start(cfg Config, after binlog.GTID) error {
	_ = s.conn.SetDeadline(time.Now().Add(cfg.ConnectTimeout))
	state := ""
	if !after.IsZero() {
		state = after.String()
	}
	for _, q := range []string{
		// CRC32 on every event, the fake ROTATE included; the parser
		// verifies each one before it reaches the sink.
		"SET @master_binlog_checksum='CRC32'",
		// MARIA_SLAVE_CAPABILITY_GTID: GTID events, GTID start position.
		"SET @mariadb_slave_capability=4",
		fmt.Sprintf("SET @slave_connect_state='%s'", state),
		"SET @slave_gtid_strict_mode=1",
		"SET @slave_gtid_ignore_duplicates=0",
		"SET @rpl_semi_sync_slave=1",
		fmt.Sprintf("SET @master_heartbeat_period=%d", cfg.HeartbeatPeriod.Nanoseconds()),
	} {
		if _, err := s.c.Execute(q); err != nil {
			return fmt.Errorf("capture: %s: %w", q, unwrapMy(err))
		}
	}
	if err := s.writeCommand(registerSlave(cfg)); err != nil {
		return fmt.Errorf("capture: COM_REGISTER_SLAVE: %w", err)
	}
	if _, err := s.c.ReadOKPacket(); err != nil {
		return fmt.Errorf("capture: COM_REGISTER_SLAVE: %w", unwrapMy(err))
	}
	if err := s.writeCommand(binlogDump(cfg.ServerID)); err != nil {
		return fmt.Errorf("capture: COM_BINLOG_DUMP: %w", err)
	}
	_ = s.conn.SetDeadline(time.Time{})
	// Every reply so far was read in full by client.Conn, and the master
	// sends nothing unasked before the dump, so no stream bytes sit in
	// client.Conn's buffer: the raw reader takes over from here.
	s.rd = newDumpReader(s.conn, cfg.ReadTimeout, maxPacket)
	return nil
}

// writeCommand sends one command packet (payload without header) with
// sequence 0.
func (s *stream) writeCommand(payload []byte) error {
	s.c.ResetSequence()
	return s.c.WritePacket(append(make([]byte, 4, 4+len(payload)), payload...))
}

func registerSlave(cfg Config) []byte {
	host, _ := os.Hostname()
	if len(host) > 255 {
		host = host[:255]
	}
	user := cfg.User
	if len(user) > 255 {
		user = user[:255]
	}
	b := []byte{mysql.COM_REGISTER_SLAVE}
	b = binary.LittleEndian.AppendUint32(b, cfg.ServerID)
	b = append(b, byte(len(host)))
	b = append(b, host...)
	b = append(b, byte(len(user)))
	b = append(b, user...)
	b = append(b, 0)                              // password
	b = binary.LittleEndian.AppendUint16(b, 0)    // port
	b = binary.LittleEndian.AppendUint32(b, 0)    // replication rank
	return binary.LittleEndian.AppendUint32(b, 0) // master id
}

func binlogDump(serverID uint32) []byte {
	b := []byte{mysql.COM_BINLOG_DUMP}
	b = binary.LittleEndian.AppendUint32(b, 4) // position: ignored, @slave_connect_state rules
	// Annotate events too, so the captured binlog is the master's binlog.
	b = binary.LittleEndian.AppendUint16(b, replication.BINLOG_SEND_ANNOTATE_ROWS_EVENT)
	return binary.LittleEndian.AppendUint32(b, serverID) // empty file name follows
}

// next returns the next event and its ACK request flag; the event is
// valid until the next call (dumpReader reuses its buffer).
func (s *stream) next() ([]byte, bool, error) {
	p, err := s.rd.readPacket()
	if errors.Is(err, wire.ErrTooBig) {
		return nil, false, fmt.Errorf("%w: packet over %d bytes", ErrProtocol, s.rd.limit)
	}
	if err != nil {
		return nil, false, err
	}
	return parseDumpPacket(p)
}

// sendAck tells the master everything up to pos is durable.
func (s *stream) sendAck(pos Position) error {
	_ = s.conn.SetWriteDeadline(time.Now().Add(s.writeTimeout))
	_, err := s.conn.Write(encodeAck(pos))
	return err
}

func (s *stream) close() { _ = s.c.Close() }

// unwrapMy digs a MySQL server error out of go-mysql's traced errors so
// callers can match it with errors.As.
func unwrapMy(err error) error {
	var me *mysql.MyError
	if errors.As(err, &me) {
		return me
	}
	if me, ok := perrors.Cause(err).(*mysql.MyError); ok {
		return me
	}
	return err
}
