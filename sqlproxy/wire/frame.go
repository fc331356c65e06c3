package wire

import (
	"io"
	"slices"
)

// A logical packet travels as frames: a 4-byte header (payload length,
// 3 bytes little-endian; sequence number, 1 byte) and up to MaxPayload
// bytes. A frame of exactly MaxPayload bytes is continued by the next
// one, so a payload that is a multiple of MaxPayload ends with an empty
// frame. Sequence numbers count frames, not packets, and wrap at 255.

// frameHeader returns the header of a frame of n (<= MaxPayload) bytes.
func frameHeader(n int, seq uint8) [4]byte {
	return [4]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}
}

// frameLen is the payload length a header announces.
func frameLen(hdr []byte) int { return int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16 }

// WritePacket writes payload to w as one logical packet whose first frame
// has sequence number seq, and returns the number after the last frame.
// w is usually a bufio.Writer: a frame is two writes (header, payload).
func WritePacket(w io.Writer, seq uint8, payload []byte) (uint8, error) {
	for {
		n := min(len(payload), MaxPayload)
		hdr := frameHeader(n, seq)
		seq++
		if _, err := w.Write(hdr[:]); err != nil {
			return seq, err
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

// AppendPacket appends payload framed as by WritePacket to dst. It is for
// a packet that must leave in one Write, e.g. beside a concurrent reader
// of the same connection with no buffered writer in between.
func AppendPacket(dst []byte, seq uint8, payload []byte) []byte {
	for {
		n := min(len(payload), MaxPayload)
		hdr := frameHeader(n, seq)
		seq++
		dst = append(append(dst, hdr[:]...), payload[:n]...)
		payload = payload[n:]
		if n < MaxPayload {
			return dst
		}
	}
}

// Reader reads logical packets from a byte stream. Conn uses it for its
// reads; a caller that frames a stream it did not open with Conn (capture
// after go-mysql's handshake) uses it directly.
//
// Sequence numbers are reported, never checked: MariaDB resets them on a
// semi-sync dump after each event that asks for an ACK, so a checking
// reader would refuse a valid stream. A caller that wants the check
// compares Seq itself.
type Reader struct {
	R io.Reader // usually a *bufio.Reader: a frame is read in two reads
	// Limit bounds a logical packet (frames joined); 0 means no bound. A
	// longer one fails with ErrTooBig as soon as its header is read.
	Limit int
	// Seq is the sequence number after the last frame read.
	Seq uint8
	// BeforeFrame, when set, runs before each frame header is read; an
	// error from it is returned. Capture sets its read deadline there,
	// so each frame, not a whole 1 GiB packet, has ReadTimeout to arrive.
	BeforeFrame func() error
}

// ReadPacket reads one logical packet. The slice is the caller's; it
// grows with the bytes that arrive, never with what a header announces.
func (r *Reader) ReadPacket() ([]byte, error) { return r.readFrames(nil) }

// header reads one frame header and returns its payload length.
func (r *Reader) header(have int) (int, error) {
	if r.BeforeFrame != nil {
		if err := r.BeforeFrame(); err != nil {
			return 0, err
		}
	}
	var hdr [4]byte
	if _, err := io.ReadFull(r.R, hdr[:]); err != nil {
		return 0, err
	}
	n := frameLen(hdr[:])
	r.Seq = hdr[3] + 1
	if r.Limit > 0 && have+n > r.Limit {
		return 0, ErrTooBig
	}
	return n, nil
}

// readFrames reads frames and appends their payloads to out until one
// shorter than MaxPayload ends the logical packet. An empty packet is an
// empty, non-nil slice.
func (r *Reader) readFrames(out []byte) ([]byte, error) {
	for {
		n, err := r.header(len(out))
		if err != nil {
			return nil, err
		}
		if out, err = readGrow(r.R, out, n); err != nil {
			return nil, err
		}
		if n < MaxPayload {
			if out == nil {
				out = []byte{}
			}
			return out, nil
		}
	}
}

// readGrow appends n bytes from r to b. It allocates at most firstChunk
// ahead of the data, then doubles the buffer as bytes arrive, so a peer
// announcing 16 MiB and sending nothing costs 16 KiB, not 16 MiB.
func readGrow(r io.Reader, b []byte, n int) ([]byte, error) {
	for n > 0 {
		if len(b) == cap(b) {
			b = slices.Grow(b, min(n, max(cap(b), firstChunk)))
		}
		k := min(n, cap(b)-len(b))
		m, err := io.ReadFull(r, b[len(b):len(b)+k])
		b = b[:len(b)+m]
		n -= m
		if err != nil {
			return nil, err
		}
	}
	return b, nil
}
