package node

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"
)

// h2Frame is one HTTP/2 frame header and its payload.
func h2Frame(typ, flags byte, sid uint32, payload []byte) []byte {
	b := []byte{byte(len(payload) >> 16), byte(len(payload) >> 8), byte(len(payload)), typ, flags, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[5:], sid)
	return append(b, payload...)
}

// readerConn is a net.Conn that reads from r, in reads of at most chunk bytes.
type readerConn struct {
	r     io.Reader
	chunk int
}

func (c *readerConn) Read(p []byte) (int, error) {
	if len(p) > c.chunk {
		p = p[:c.chunk]
	}
	return c.r.Read(p)
}
func (c *readerConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c *readerConn) Close() error                     { return nil }
func (c *readerConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *readerConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *readerConn) SetDeadline(time.Time) error      { return nil }
func (c *readerConn) SetReadDeadline(time.Time) error  { return nil }
func (c *readerConn) SetWriteDeadline(time.Time) error { return nil }

// FuzzDataCapConn: whatever bytes a peer sends, in whatever read sizes,
// the frame follower never panics, its total is the sum of its open
// streams' bytes, never over the cap without failing the read, and it
// tracks at most maxOpenDataStreams streams.
func FuzzDataCapConn(f *testing.F) {
	var ok []byte
	ok = append(ok, h2Preface...)
	ok = append(ok, h2Frame(0x4, 0, 0, nil)...) // SETTINGS
	ok = append(ok, h2Frame(h2Headers, 0x4, 1, []byte("hdrs"))...)
	ok = append(ok, h2Frame(h2Data, h2EndStream, 1, make([]byte, 100))...)
	ok = append(ok, h2Frame(h2Headers, 0x4, 3, nil)...)
	ok = append(ok, h2Frame(h2Data, 0, 3, make([]byte, 50))...)
	ok = append(ok, h2Frame(h2RSTStream, 0, 3, []byte{0, 0, 0, 8})...)
	f.Add(ok, 7)
	var empties []byte
	empties = append(empties, h2Preface...)
	for sid := uint32(1); sid < 4*maxOpenDataStreams; sid += 2 {
		empties = append(empties, h2Frame(h2Data, 0, sid, nil)...)
	}
	f.Add(empties, 1<<16)
	f.Add(append([]byte(h2Preface), h2Frame(h2Data, 0, 1, make([]byte, 300))...), 1)
	f.Fuzz(func(t *testing.T, in []byte, chunk int) {
		if chunk <= 0 || chunk > 1<<16 {
			chunk = 1 + (chunk&0xffff)%4096
		}
		c := &dataCapConn{Conn: &readerConn{r: bytes.NewReader(in), chunk: chunk}, max: 256, skip: len(h2Preface), open: map[uint32]int{}}
		buf := make([]byte, 1<<16)
		for {
			_, err := c.Read(buf)
			sum := 0
			for _, n := range c.open {
				sum += n
			}
			if sum != c.total || c.total < 0 {
				t.Fatalf("total %d, open streams hold %d", c.total, sum)
			}
			if len(c.open) > maxOpenDataStreams {
				t.Fatalf("tracks %d streams", len(c.open))
			}
			if err == errPeerRequestTooBig {
				return
			}
			if c.total > c.max {
				t.Fatalf("total %d over the cap %d, read not failed", c.total, c.max)
			}
			if err != nil {
				return
			}
		}
	})
}
