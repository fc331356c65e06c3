package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"

	"phxgo/binlogd/rawnet"
)

// MaxPayload is the largest payload of one frame; a payload of exactly
// MaxPayload is continued by the next frame (possibly empty).
const MaxPayload = 1<<24 - 1

// ErrTooBig is returned by ReadPacket and ReadPacketReuse when a packet
// announces more than Conn.Limit bytes. Nothing of it was buffered beyond
// what arrived; the caller answers 1153 (TooBig) and closes the
// connection, as MariaDB does: the rest of the packet is still unread.
var ErrTooBig = errors.New("wire: packet bigger than the limit")

// TooBig is MariaDB's ER_NET_PACKET_TOO_LARGE, sent before it closes a
// connection whose packet exceeds max_allowed_packet.
var TooBig = &Error{Code: 1153, SQLState: "08S01", Message: "Got a packet bigger than 'max_allowed_packet' bytes"}

// DefaultBufferSize is the read and write buffer size of NewConn.
const DefaultBufferSize = 64 << 10

// firstChunk is the most a read allocates for a frame before its bytes
// arrive; the buffer then doubles as data comes in (readGrow).
const firstChunk = 16 << 10

// Conn frames MySQL packets over a net.Conn with buffered I/O. It is not
// safe for concurrent use: a session owns its client Conn and, while it
// holds it, a backend Conn.
type Conn struct {
	net.Conn
	R   *bufio.Reader
	W   *bufio.Writer
	Seq uint8 // sequence number of the next packet written
	// Limit bounds the length of one logical packet read (continuation
	// frames joined); 0 means no bound. A longer one fails with ErrTooBig
	// as soon as its header is read.
	Limit int

	scratch []byte        // ReadPacketReuse's buffer
	rw      io.ReadWriter // what the buffers read and write: Conn, or its raw path (rawnet.Conn)
	// mixedR: R reads bytes kept from before a Resize ahead of rw, so
	// rw's readiness does not say whether R has a byte (FlushAwaitReply).
	mixedR bool
}

// Socket is what the buffers read and write underneath: the raw path
// (rawnet.Conn) when NewConnRaw found a socket, else Conn. A TLS session
// started over c writes its records here, so they take the raw path too.
func (c *Conn) Socket() io.ReadWriter { return c.rw }

// NewConn wraps c with 64 KiB read and write buffers.
func NewConn(c net.Conn) *Conn { return NewConnSize(c, DefaultBufferSize) }

// NewConnSize wraps c with read and write buffers of size bytes (a
// client before login gets small ones: strangers cost little).
func NewConnSize(c net.Conn, size int) *Conn {
	return &Conn{Conn: c, rw: c, R: bufio.NewReaderSize(c, size), W: bufio.NewWriterSize(c, size)}
}

// NewConnRaw is NewConnSize whose buffers read and write a TCP or unix
// socket with raw syscalls (package rawnet: no P hand-off per read or write);
// any other net.Conn (TLS, pipes) is used as NewConnSize would.
func NewConnRaw(c net.Conn, size int) *Conn {
	rw := io.ReadWriter(c)
	if r, ok := rawnet.New(c); ok {
		rw = r
	}
	return &Conn{Conn: c, rw: rw, R: bufio.NewReaderSize(rw, size), W: bufio.NewWriterSize(rw, size)}
}

// Resize replaces the buffers with ones of size bytes. Call it with the
// write buffer flushed; bytes the old read buffer holds are read first.
func (c *Conn) Resize(size int) {
	if c.R.Size() == size {
		return
	}
	rw := c.rw
	if rw == nil {
		rw = c.Conn
	}
	var src io.Reader = rw
	if n := c.R.Buffered(); n > 0 {
		held, _ := c.R.Peek(n)
		src = io.MultiReader(bytes.NewReader(bytes.Clone(held)), rw)
		c.mixedR = true
	}
	c.R = bufio.NewReaderSize(src, size)
	c.W = bufio.NewWriterSize(rw, size)
}

// ReadPacket reads one logical packet (continuation frames joined) and
// sets Seq to the sequence number after it. The returned slice is owned
// by the caller. Memory grows with the bytes that arrive, never with what
// a header announces (readGrow).
func (c *Conn) ReadPacket() ([]byte, error) { return c.readFrames(nil) }

// reader is c's read side as a Reader; the caller copies Seq back.
func (c *Conn) reader() Reader { return Reader{R: c.R, Limit: c.Limit, Seq: c.Seq} }

// readFrames reads frames and appends their payloads to out until one
// shorter than MaxPayload ends the logical packet.
func (c *Conn) readFrames(out []byte) ([]byte, error) {
	r := c.reader()
	out, err := r.readFrames(out)
	c.Seq = r.Seq
	return out, err
}

// ReadPacketReuse is ReadPacket into a buffer the Conn keeps: the slice
// is valid only until the next read on c (no allocation per command).
func (c *Conn) ReadPacketReuse() ([]byte, error) {
	r := c.reader()
	n, err := r.header(0)
	c.Seq = r.Seq
	if err != nil {
		return nil, err
	}
	if n == MaxPayload || n > 64<<10 {
		// Rare big packets: a new slice grown as bytes arrive, not kept.
		out, err := readGrow(c.R, nil, n)
		if err != nil || n < MaxPayload {
			return out, err
		}
		return c.readFrames(out)
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

// WritePacket buffers payload as one logical packet starting at Seq,
// splitting it into frames as needed. Call Flush to send.
func (c *Conn) WritePacket(payload []byte) error {
	var err error
	c.Seq, err = writePacketBuf(c.W, c.Seq, payload)
	return err
}

// writePacketBuf is WritePacket into a bufio.Writer. The header goes in
// byte by byte: a slice of it passed to Write (which may hand it to the
// underlying writer) made it one allocation per packet.
func writePacketBuf(w *bufio.Writer, seq uint8, payload []byte) (uint8, error) {
	for {
		n := min(len(payload), MaxPayload)
		hdr := frameHeader(n, seq)
		seq++
		for _, b := range hdr {
			if err := w.WriteByte(b); err != nil {
				return seq, err
			}
		}
		if _, err := w.Write(payload[:n]); err != nil {
			return seq, err
		}
		payload = payload[n:]
		if n < MaxPayload {
			return seq, nil
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

// WriteRequest writes one packet that is a request the caller reads the
// answer of next, and flushes it. On the raw path (NewConnRaw, nothing
// read ahead) the flush then waits until the answer starts to arrive,
// so the read that follows finds it rather than failing first with
// EAGAIN and waiting (rawnet.Conn.SetAwaitReply). Only for a peer that sends
// nothing unasked (a MariaDB or proxy between commands): bytes it sent
// before the request would not end the wait. A failed wait (a closed
// connection) shows on the next read.
func (c *Conn) WriteRequest(payload []byte) error {
	if err := c.WritePacket(payload); err != nil {
		return err
	}
	r, ok := c.rw.(*rawnet.Conn)
	if !ok || c.mixedR || c.R.Buffered() > 0 {
		return c.W.Flush()
	}
	r.SetAwaitReply(true)
	err := c.W.Flush()
	r.SetAwaitReply(false)
	return err
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
	n := frameLen(hdr)
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
	if m, err := io.CopyN(dst, c.R, int64(4+n)); err != nil {
		if m > 0 {
			// dst holds part of a frame: whoever reads it can no
			// longer be answered, only closed (an ERR packet after
			// the cut bytes reads as garbage: client error 2027).
			return f, fmt.Errorf("%w: %w", ErrCutFrame, err)
		}
		return f, err // either side; callers close both
	}
	f.Head = []byte{first}
	return f, nil
}

// ErrCutFrame marks a RelayFrame that failed after copying part of a
// frame to its destination (a frame longer than the read buffer).
var ErrCutFrame = errors.New("wire: relay cut mid-frame")

// WriteError marks a failure writing to the destination of RelayFrame.
type WriteError struct{ Err error }

func (e *WriteError) Error() string { return "wire: relay write: " + e.Err.Error() }
func (e *WriteError) Unwrap() error { return e.Err }

// ErrMalformed reports a malformed packet.
type ErrMalformed struct{ What string }

func (e *ErrMalformed) Error() string { return fmt.Sprintf("wire: malformed %s packet", e.What) }

func u16(b []byte) uint16 { return binary.LittleEndian.Uint16(b) }
