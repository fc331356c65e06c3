package replserver

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

func packetOf(seq byte, payload []byte) []byte {
	n := len(payload)
	return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}, payload...)
}

// guardReading feeds stream through a preAuthGuard in reads of chunk
// bytes and returns what the guard let through and its first error.
func guardReading(t *testing.T, stream []byte, chunk int) ([]byte, error) {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	go func() {
		defer b.Close()
		for len(stream) > 0 {
			k := min(chunk, len(stream))
			if _, err := b.Write(stream[:k]); err != nil {
				return
			}
			stream = stream[k:]
		}
	}()
	g := newPreAuthGuard(a)
	var got bytes.Buffer
	buf := make([]byte, chunk)
	for {
		n, err := g.Read(buf)
		got.Write(buf[:n])
		if errors.Is(err, io.EOF) {
			return got.Bytes(), nil
		}
		if err != nil {
			return got.Bytes(), err
		}
	}
}

func TestPreAuthGuardFraming(t *testing.T) {
	big := make([]byte, maxPreAuthPacket+1)
	tlsLike := bytes.Repeat([]byte{0xff}, 200) // inside TLS the "headers" are ciphertext
	cases := []struct {
		name   string
		stream []byte
		want   error
	}{
		{"a handshake response", packetOf(1, make([]byte, 300)), nil},
		{"a packet at the limit", packetOf(1, make([]byte, maxPreAuthPacket)), nil},
		{"a packet over the limit", packetOf(1, big), errPreAuthPacket},
		{"a 16 MiB header alone", []byte{0xff, 0xff, 0xff, 1}, errPreAuthPacket},
		{"an SSLRequest, then TLS bytes", append(packetOf(1, make([]byte, sslRequestLen)), tlsLike...), nil},
		{"a response, then a header over the limit", append(packetOf(1, make([]byte, 100)), 0xff, 0xff, 0xff, 3), errPreAuthPacket},
		{"more than the budget, through TLS", append(packetOf(1, make([]byte, sslRequestLen)), make([]byte, preAuthBudget)...), errPreAuthBudget},
	}
	for _, c := range cases {
		for _, chunk := range []int{1, 3, 7, 4096} {
			if c.name == "more than the budget, through TLS" && chunk < 4096 {
				continue // the same verdict, only slower
			}
			got, err := guardReading(t, c.stream, chunk)
			if !errors.Is(err, c.want) {
				t.Errorf("%s, reads of %d: error %v, want %v", c.name, chunk, err, c.want)
			}
			if c.want == nil && !bytes.Equal(got, c.stream) {
				t.Errorf("%s, reads of %d: passed %d of %d bytes", c.name, chunk, len(got), len(c.stream))
			}
		}
	}
}

// Once logged in, the guard stays out of the way: a replica's packets
// may be large.
func TestPreAuthGuardOpenAfterLogin(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	stream := packetOf(0, make([]byte, maxPreAuthPacket+10))
	go func() { _, _ = b.Write(stream); b.Close() }()
	g := newPreAuthGuard(a)
	g.loggedIn()
	got, err := io.ReadAll(g)
	if err != nil || len(got) != len(stream) {
		t.Fatalf("after login: %d of %d bytes, err %v", len(got), len(stream), err)
	}
}

// The audit's attack: a stranger's handshake "response" announcing 16
// MiB is refused at once instead of go-mysql reserving it and waiting
// out the handshake deadline.
func TestStrangerHugeHeaderRefusedAtOnce(t *testing.T) {
	cfg := DefaultConfig()
	cfg.User, cfg.Password, cfg.ServerID = testUser, testPassword, endpointID
	s, err := New(cfg, NewMemorySource(0))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := net.DialTimeout("tcp", s.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(handshakeTimeout / 2))
	hdr := make([]byte, 4)
	if _, err := io.ReadFull(c, hdr); err != nil {
		t.Fatal(err)
	}
	greeting := make([]byte, int(hdr[0])|int(hdr[1])<<8|int(hdr[2])<<16)
	if _, err := io.ReadFull(c, greeting); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte{0xff, 0xff, 0xff, 1}); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(c)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("the connection was still open after %v: the 16 MiB header was waited for", handshakeTimeout/2)
		}
	}
	_ = rest // closed, with or without an error packet
}
