package replserver

import (
	"bufio"
	"encoding/binary"
	"net"
	"time"
)

// maxPayload is the largest payload of one MySQL packet; longer payloads
// continue in the next packets, and one of exactly this size is followed
// by an empty packet.
const maxPayload = 1<<24 - 1

// packetWriter frames payloads as MySQL packets onto a buffered conn.
// It is used by one goroutine (the dump loop).
type packetWriter struct {
	nc      net.Conn
	w       *bufio.Writer
	seq     byte
	timeout time.Duration
}

func newPacketWriter(nc net.Conn, seq byte, timeout time.Duration) *packetWriter {
	return &packetWriter{nc: nc, w: bufio.NewWriterSize(nc, 256<<10), seq: seq, timeout: timeout}
}

// packet writes one logical payload (split into 16 MB packets as needed).
func (p *packetWriter) packet(payload []byte) error {
	_ = p.nc.SetWriteDeadline(time.Now().Add(p.timeout))
	for {
		n := min(len(payload), maxPayload)
		var h [4]byte
		h[0], h[1], h[2], h[3] = byte(n), byte(n>>8), byte(n>>16), p.seq
		p.seq++
		if _, err := p.w.Write(h[:]); err != nil {
			return err
		}
		if _, err := p.w.Write(payload[:n]); err != nil {
			return err
		}
		payload = payload[n:]
		if n < maxPayload {
			return nil
		}
	}
}

// errPacket writes an ERR packet (protocol 4.1 form) and flushes.
func (p *packetWriter) errPacket(code uint16, msg string) error {
	b := make([]byte, 0, 9+len(msg))
	b = append(b, 0xff)
	b = binary.LittleEndian.AppendUint16(b, code)
	b = append(b, '#')
	b = append(b, "HY000"...)
	b = append(b, msg...)
	if err := p.packet(b); err != nil {
		return err
	}
	return p.flush()
}

func (p *packetWriter) flush() error {
	_ = p.nc.SetWriteDeadline(time.Now().Add(p.timeout))
	return p.w.Flush()
}
