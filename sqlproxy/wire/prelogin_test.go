package wire

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"runtime"
	"testing"
)

// frames encodes payload as wire frames starting at seq 0.
func frames(t *testing.T, payload []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	c := &Conn{W: bufio.NewWriter(&buf)}
	if err := c.WriteFlush(payload); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// pipeConn serves b as the peer's bytes (then EOF).
func pipeConn(b []byte) *Conn {
	a, z := net.Pipe()
	go func() { _, _ = z.Write(b); z.Close() }()
	return NewConnSize(a, 4096)
}

// TestLimit: a packet longer than Conn.Limit fails with ErrTooBig as
// soon as its header is read, on both read paths; one at the limit,
// split over continuation frames, is read whole.
func TestLimit(t *testing.T) {
	big := bytes.Repeat([]byte{7}, MaxPayload+10)
	for _, reuse := range []bool{false, true} {
		read := func(c *Conn) ([]byte, error) {
			if reuse {
				return c.ReadPacketReuse()
			}
			return c.ReadPacket()
		}
		c := pipeConn(frames(t, big))
		c.Limit = len(big)
		p, err := read(c)
		if err != nil || !bytes.Equal(p, big) {
			t.Fatalf("reuse=%v: at the limit: %d bytes, %v", reuse, len(p), err)
		}
		c = pipeConn(frames(t, big))
		c.Limit = len(big) - 1
		if _, err := read(c); !errors.Is(err, ErrTooBig) {
			t.Fatalf("reuse=%v: over the limit: %v", reuse, err)
		}
		c = pipeConn([]byte{0xff, 0xff, 0xff, 0}) // header only
		c.Limit = 1 << 20
		if _, err := read(c); !errors.Is(err, ErrTooBig) {
			t.Fatalf("reuse=%v: header over the limit: %v", reuse, err)
		}
	}
}

// TestReadGrowsWithData: a header announcing 16 MiB followed by a few
// bytes allocates about firstChunk, not 16 MiB.
func TestReadGrowsWithData(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const conns = 20
	for range conns {
		c := pipeConn(append([]byte{0xff, 0xff, 0xff, 0}, 1, 2, 3))
		if _, err := c.ReadPacket(); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("truncated packet: %v", err)
		}
	}
	runtime.ReadMemStats(&after)
	if d := after.TotalAlloc - before.TotalAlloc; d > conns*(firstChunk+3*DefaultBufferSize) {
		t.Fatalf("%d truncated 16 MiB packets allocated %d bytes", conns, d)
	}
}

// TestResizeKeepsBuffered: bytes already buffered when the read buffer
// is replaced are read first.
func TestResizeKeepsBuffered(t *testing.T) {
	c := pipeConn(append(frames(t, []byte("one")), frames(t, []byte("two"))...))
	if p, err := c.ReadPacket(); err != nil || string(p) != "one" {
		t.Fatalf("%q %v", p, err)
	}
	c.Resize(DefaultBufferSize)
	if p, err := c.ReadPacket(); err != nil || string(p) != "two" {
		t.Fatalf("after resize: %q %v", p, err)
	}
}

func handshakeSeed(attrs map[string]string) []byte {
	r := &Response{Caps: ClientProtocol41 | ClientSecureConn | ClientPluginAuth | ClientPluginAuthLenenc |
		ClientConnectWithDB | ClientConnectAttrs, MaxPacket: 1 << 24, Charset: 45, User: "app",
		Auth: bytes.Repeat([]byte{9}, 20), DB: "test", Plugin: NativePlugin, Attrs: attrs}
	return r.Encode()
}

// FuzzPreLogin feeds arbitrary first packets to what the proxy parses
// before login: no panic, no allocation beyond the packet's size, and a
// parsed response re-encodes to something that parses the same.
func FuzzPreLogin(f *testing.F) {
	f.Add(handshakeSeed(map[string]string{"_phxgo_hop": "1", "_phxgo_client": "10.0.0.7"}))
	f.Add(handshakeSeed(nil))
	f.Add(SSLRequest(ClientProtocol41|ClientSecureConn, 1<<24, 45))
	f.Add(bytes.Repeat([]byte{0xff}, 40))
	f.Add(append(SSLRequest(ClientProtocol41|ClientConnectAttrs|ClientPluginAuth, 0, 8), 'u', 0, 0xfe, 1, 2))
	f.Fuzz(func(t *testing.T, p []byte) {
		_ = IsSSLRequest(p)
		_, _ = ParseGreeting(p)
		_, _, _ = ParseAuthSwitch(p)
		_ = ParseError(p)
		r, err := ParseResponse(p)
		if err != nil {
			return
		}
		if len(r.Attrs) > maxAttrs {
			t.Fatalf("%d attributes kept", len(r.Attrs))
		}
		if len(r.User)+len(r.Auth)+len(r.DB)+len(r.Plugin) > len(p) {
			t.Fatal("parsed fields longer than the packet")
		}
		r2, err := ParseResponse(r.Encode())
		if err != nil {
			t.Fatalf("re-encoded response does not parse: %v", err)
		}
		if r2.User != r.User || !bytes.Equal(r2.Auth, r.Auth) || r2.Caps != r.Caps {
			t.Fatalf("round trip changed the response: %+v vs %+v", r2, r)
		}
	})
}

// FuzzFrames reads arbitrary bytes as packets under a limit: no panic,
// nothing longer than the limit, and never more allocated than the
// bytes that arrived plus one chunk.
func FuzzFrames(f *testing.F) {
	f.Add([]byte{3, 0, 0, 0, 'a', 'b', 'c'}, uint16(100))
	f.Add([]byte{0xff, 0xff, 0xff, 0, 1}, uint16(65535))
	f.Add([]byte{0, 0, 0, 0}, uint16(0))
	f.Fuzz(func(t *testing.T, b []byte, limit uint16) {
		c := &Conn{R: bufio.NewReader(bytes.NewReader(b)), Limit: int(limit)}
		for range 4 {
			p, err := c.ReadPacket()
			if err != nil {
				return
			}
			if limit > 0 && len(p) > int(limit) {
				t.Fatalf("read %d bytes over limit %d", len(p), limit)
			}
			if cap(p) > len(b)+firstChunk {
				t.Fatalf("buffer of %d for %d input bytes", cap(p), len(b))
			}
		}
	})
}
