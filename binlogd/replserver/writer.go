package replserver

import (
	"bufio"
	"net"
	"time"

	"phxgo/sqlproxy/wire"
)

// packetWriter frames payloads as MySQL packets onto a buffered conn,
// each write bounded by timeout. It is used by one goroutine (the dump
// loop).
type packetWriter struct {
	nc      net.Conn
	w       *bufio.Writer
	seq     byte
	timeout time.Duration
}

func newPacketWriter(nc net.Conn, seq byte, timeout time.Duration) *packetWriter {
	return &packetWriter{nc: nc, w: bufio.NewWriterSize(nc, 256<<10), seq: seq, timeout: timeout}
}

// packet writes one logical payload (split into 16 MB frames as needed).
func (p *packetWriter) packet(payload []byte) error {
	// A deadline only where the packet reaches the conn: most go to the
	// buffer, and setting one per event (several per transaction) was a
	// visible part of a replica binlogd's CPU (issue 19).
	if frames := len(payload)>>24 + 1; len(payload)+4*frames > p.w.Available() {
		_ = p.nc.SetWriteDeadline(time.Now().Add(p.timeout))
	}
	var err error
	p.seq, err = wire.WritePacket(p.w, p.seq, payload)
	return err
}

// errPacket writes an ERR packet (protocol 4.1 form) and flushes.
func (p *packetWriter) errPacket(code uint16, msg string) error {
	if err := p.packet((&wire.Error{Code: code, SQLState: "HY000", Message: msg}).Packet()); err != nil {
		return err
	}
	return p.flush()
}

func (p *packetWriter) flush() error {
	_ = p.nc.SetWriteDeadline(time.Now().Add(p.timeout))
	return p.w.Flush()
}
