package wire

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
)

// MaxPayload is the largest payload of one frame; a payload of exactly
// MaxPayload is continued by the next frame (possibly empty).
const MaxPayload = 1<<24 - 1

// Conn frames MySQL packets over a net.Conn with buffered I/O. It is not
// safe for concurrent use: a session owns its client Conn and, while it
// holds it, a backend Conn.
type Conn struct {
	net.Conn
	R   *bufio.Reader
	W   *bufio.Writer
	Seq uint8 // sequence number of the next packet written

	scratch []byte // ReadPacketReuse's buffer
}

// NewConn wraps c with 64 KiB read and write buffers.
func NewConn(c net.Conn) *Conn {
	return &Conn{Conn: c, R: bufio.NewReaderSize(c, 64<<10), W: bufio.NewWriterSize(c, 64<<10)}
}

// ReadPacket reads one logical packet (continuation frames joined) and
// sets Seq to the sequence number after it. The returned slice is owned
// by the caller.
func (c *Conn) ReadPacket() ([]byte, error) {
	var out []byte
	for {
		var hdr [4]byte
		if _, err := io.ReadFull(c.R, hdr[:]); err != nil {
			return nil, err
		}
		n := int(uint32(hdr[0]) | uint32(hdr[1])<<8 | uint32(hdr[2])<<16)
		c.Seq = hdr[3] + 1
		start := len(out)
		out = append(out, make([]byte, n)...)
		if _, err := io.ReadFull(c.R, out[start:]); err != nil {
			return nil, err
		}
		if n < MaxPayload {
			return out, nil
		}
	}
}

// ReadPacketReuse is ReadPacket into a buffer the Conn keeps: the slice
// is valid only until the next read on c (no allocation per command).
func (c *Conn) ReadPacketReuse() ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(c.R, hdr[:]); err != nil {
		return nil, err
	}
	n := int(uint32(hdr[0]) | uint32(hdr[1])<<8 | uint32(hdr[2])<<16)
	c.Seq = hdr[3] + 1
	if n == MaxPayload || n > 64<<10 {
		// Rare big packets: allocate, and do not keep a huge buffer.
		rest, err := c.readRest(n)
		return rest, err
	}
	if cap(c.scratch) < n {
		c.scratch = make([]byte, n, max(n, 256))
	}
	p := c.scratch[:n]
	if _, err := io.ReadFull(c.R, p); err != nil {
		return nil, err
	}
	return p, nil
}

// readRest reads the payload of a frame whose header announced n bytes
// and any continuation frames, into a new slice.
func (c *Conn) readRest(n int) ([]byte, error) {
	out := make([]byte, n)
	if _, err := io.ReadFull(c.R, out); err != nil {
		return nil, err
	}
	if n < MaxPayload {
		return out, nil
	}
	more, err := c.ReadPacket()
	if err != nil {
		return nil, err
	}
	return append(out, more...), nil
}

// WritePacket buffers payload as one logical packet starting at Seq,
// splitting it into frames as needed. Call Flush to send.
func (c *Conn) WritePacket(payload []byte) error {
	for {
		n := len(payload)
		if n > MaxPayload {
			n = MaxPayload
		}
		hdr := [4]byte{byte(n), byte(n >> 8), byte(n >> 16), c.Seq}
		c.Seq++
		if _, err := c.W.Write(hdr[:]); err != nil {
			return err
		}
		if _, err := c.W.Write(payload[:n]); err != nil {
			return err
		}
		payload = payload[n:]
		if n < MaxPayload {
			return nil
		}
	}
}

// WriteFlush writes one packet and flushes.
func (c *Conn) WriteFlush(payload []byte) error {
	if err := c.WritePacket(payload); err != nil {
		return err
	}
	return c.W.Flush()
}

// Frame is the header of one frame and the first bytes of its payload,
// enough to classify it without copying the body.
type Frame struct {
	Len  int
	Seq  uint8
	Head []byte // up to the whole payload if it fits the read buffer, else empty
}

// RelayFrame copies exactly one frame from c to dst without decoding it
// and returns its header. When the whole frame fits c's read buffer,
// Frame.Head is the payload (valid until the next read on c); otherwise
// Frame.Head holds just the first byte.
func (c *Conn) RelayFrame(dst *bufio.Writer) (Frame, error) {
	hdr, err := c.R.Peek(4)
	if err != nil {
		return Frame{}, err
	}
	n := int(uint32(hdr[0]) | uint32(hdr[1])<<8 | uint32(hdr[2])<<16)
	f := Frame{Len: n, Seq: hdr[3]}
	if 4+n <= c.R.Size() {
		b, err := c.R.Peek(4 + n)
		if err != nil {
			return f, err
		}
		if _, err := dst.Write(b); err != nil {
			return f, &WriteError{err}
		}
		f.Head = b[4:]
		_, _ = c.R.Discard(4 + n)
		return f, nil
	}
	b, err := c.R.Peek(5)
	if err != nil {
		return f, err
	}
	first := b[4]
	if _, err := io.CopyN(dst, c.R, int64(4+n)); err != nil {
		return f, err // either side; callers close both
	}
	f.Head = []byte{first}
	return f, nil
}

// WriteError marks a failure writing to the destination of RelayFrame.
type WriteError struct{ Err error }

func (e *WriteError) Error() string { return "wire: relay write: " + e.Err.Error() }
func (e *WriteError) Unwrap() error { return e.Err }

// ErrMalformed reports a malformed packet.
type ErrMalformed struct{ What string }

func (e *ErrMalformed) Error() string { return fmt.Sprintf("wire: malformed %s packet", e.What) }

func u16(b []byte) uint16 { return binary.LittleEndian.Uint16(b) }
