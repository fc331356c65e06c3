package replserver

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"phxgo/internal/testkit"
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
	g := newPreAuthGuard(a, nil)
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
	var overBudget []byte
	for seq := byte(1); len(overBudget) <= preAuthBudget; seq++ {
		overBudget = append(overBudget, packetOf(seq, make([]byte, 60<<10))...)
	}
	cases := []struct {
		name   string
		stream []byte
		want   error
	}{
		{"a handshake response", packetOf(1, make([]byte, 300)), nil},
		{"a packet at the limit", packetOf(1, make([]byte, maxPreAuthPacket)), nil},
		{"a packet over the limit", packetOf(1, big), errPreAuthPacket},
		{"a 16 MiB header alone", []byte{0xff, 0xff, 0xff, 1}, errPreAuthPacket},
		{"a response, then a header over the limit", append(packetOf(1, make([]byte, 100)), 0xff, 0xff, 0xff, 3), errPreAuthPacket},
		{"packets over the budget", overBudget, errPreAuthBudget},
	}
	for _, c := range cases {
		for _, chunk := range []int{1, 3, 7, 4096} {
			if c.name == "packets over the budget" && chunk < 4096 {
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
	g := newPreAuthGuard(a, nil)
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
	s := guardedEndpoint(t, nil)
	rest := sendHugeHeader(t, s.Addr())
	// Closed, after MariaDB's own "Bad handshake": no Go error text (the
	// guard's limit, go-mysql's "connection was bad") reaches a stranger.
	if len(rest) < 7 || rest[4] != 0xff || int(rest[5])|int(rest[6])<<8 != 1043 ||
		!strings.Contains(string(rest), "Bad handshake") || strings.Contains(string(rest), "limit") {
		t.Fatalf("answer before closing: %q, want ERR 1043 Bad handshake", rest)
	}
}

// tlsSession opens a connection to s, asks for TLS and finishes the
// handshake, as a MariaDB client does before its handshake response.
func tlsSession(t *testing.T, s *Server, clientTLS *tls.Config) *tls.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", s.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(handshakeTimeout / 2))
	hdr := make([]byte, 4)
	if _, err := io.ReadFull(c, hdr); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, make([]byte, int(hdr[0])|int(hdr[1])<<8|int(hdr[2])<<16)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(packetOf(1, sslRequest())); err != nil {
		t.Fatal(err)
	}
	tc := tls.Client(c, clientTLS)
	if err := tc.Handshake(); err != nil {
		t.Fatalf("TLS handshake: %v", err)
	}
	return tc
}

// sslRequest is MariaDB's SSLRequest payload: capabilities with
// CLIENT_SSL, PROTOCOL_41 and SECURE_CONNECTION (go-mysql requires it),
// max packet, charset, 23 zero bytes.
func sslRequest() []byte {
	req := make([]byte, sslRequestLen)
	req[0], req[1] = 0x00, 0x8a // CLIENT_PROTOCOL_41 (0x200) | CLIENT_SSL (0x800) | CLIENT_SECURE_CONNECTION (0x8000)
	req[2], req[3] = 0x08, 0x00 // CLIENT_PLUGIN_AUTH (0x80000)
	req[7], req[8] = 0x01, 33
	return req
}

// A second SSLRequest inside the guard's TLS would make go-mysql start a
// TLS session of its own over the guard, out of the guard's sight
// (re-audit: 60 such connections took binlogd to 1.5 GiB). It ends the
// connection instead of getting a ServerHello.
func TestSecondSSLRequestInsideTLSRefused(t *testing.T) {
	s, clientTLS := outsideEndpoint(t, NewMemorySource(0))
	tc := tlsSession(t, s, clientTLS)
	if _, err := tc.Write(packetOf(2, sslRequest())); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(tc)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("still open after %v: waiting for a nested TLS handshake", handshakeTimeout/2)
	}
	if len(b) > 2 && b[0] == 0x16 && b[1] == 0x03 { // a TLS handshake record (an ERR packet of 22 bytes starts 0x16 0x00)
		t.Fatalf("the server answered a nested TLS handshake: %x", b[:min(len(b), 16)])
	}
}

// The same attack inside TLS: a stranger needs no client certificate to
// finish the handshake, and go-mysql used to read the packets inside
// unchecked (64 such connections: about 1 GiB reserved). The guard
// answers the SSLRequest itself, so the header is refused there too.
func TestStrangerHugeHeaderInsideTLSRefusedAtOnce(t *testing.T) {
	s, clientTLS := outsideEndpoint(t, NewMemorySource(0))
	tc := tlsSession(t, s, clientTLS)
	if _, err := tc.Write([]byte{0xff, 0xff, 0xff, 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(tc); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("still open after %v: the 16 MiB header inside TLS was waited for", handshakeTimeout/2)
		}
	}
}

// Strangers' failed handshakes are logged once per handshakeLogEvery,
// without go-mysql's stack traces (audit: 5,000 lines, 1.2 MB in 5 s).
func TestFailedHandshakeLogBounded(t *testing.T) {
	var logs testkit.LogBuffer
	s := guardedEndpoint(t, slog.New(slog.NewTextHandler(&logs, nil)))
	const tries = 6
	for range tries {
		sendHugeHeader(t, s.Addr())
	}
	out := logs.String()
	if n := strings.Count(out, "handshake failed"); n != 1 {
		t.Fatalf("%d log lines for %d failed handshakes, want 1:\n%.3000s", n, tries, out)
	}
	if strings.Contains(out, ".go:") {
		t.Fatalf("a stack trace in the log:\n%.3000s", out)
	}
}

// guardedEndpoint is a listening endpoint with the test account, logging
// to log (nil: the default logger).
func guardedEndpoint(t *testing.T, log *slog.Logger) *Server {
	t.Helper()
	cfg := DefaultConfig()
	cfg.User, cfg.Password, cfg.ServerID, cfg.Logger = testUser, testPassword, endpointID, log
	s, err := New(cfg, NewMemorySource(0))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// sendHugeHeader is a stranger who reads the greeting and answers with
// a header announcing 16 MiB; it returns what the server sent before it
// closed the connection, failing the test if it waited for the 16 MiB.
func sendHugeHeader(t *testing.T, addr string) []byte {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(handshakeTimeout / 2))
	hdr := make([]byte, 4)
	if _, err := io.ReadFull(c, hdr); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, make([]byte, int(hdr[0])|int(hdr[1])<<8|int(hdr[2])<<16)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte{0xff, 0xff, 0xff, 1}); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the connection was still open after %v: the 16 MiB header was waited for", handshakeTimeout/2)
	}
	return rest
}
