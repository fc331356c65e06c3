package rawnet

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// socketPair returns both ends of a real connection on network ("tcp"
// or "unix"), closed when the test ends.
func socketPair(t *testing.T, network string) (client, server net.Conn) {
	t.Helper()
	client, server, err := Pair(network, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// TestConn: the raw path behaves as net.Conn where the proxy relies on
// it: a write larger than the socket buffers completes (EAGAIN waits in
// the netpoller), the reader gets every byte then io.EOF, a read
// deadline ends a read with os.ErrDeadlineExceeded, and a read on a
// closed conn fails with net.ErrClosed.
func TestConn(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			a, b := socketPair(t, network)
			ra, rb := Wrap(a), Wrap(b)
			if _, ok := ra.(*Conn); !ok {
				t.Fatalf("Wrap(%T) = %T, want *Conn", a, ra)
			}
			want := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB: more than the socket buffers hold
			done := make(chan error, 1)
			go func() {
				n, err := ra.Write(want)
				if err == nil && n != len(want) {
					err = io.ErrShortWrite
				}
				a.(interface{ CloseWrite() error }).CloseWrite()
				done <- err
			}()
			got, err := io.ReadAll(rb)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if err := <-done; err != nil {
				t.Fatalf("write: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("read %d bytes, want the %d written", len(got), len(want))
			}

			c, d := socketPair(t, network)
			rc := Wrap(c)
			_ = c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			if _, err := rc.Read(make([]byte, 16)); !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("read past the deadline: %v, want os.ErrDeadlineExceeded", err)
			}
			_ = c.SetReadDeadline(time.Time{})
			if _, err := d.Write([]byte("x")); err != nil {
				t.Fatal(err)
			}
			if n, err := rc.Read(make([]byte, 16)); n != 1 || err != nil {
				t.Fatalf("read after the deadline was cleared: %d, %v", n, err)
			}
			c.Close()
			if _, err := rc.Read(make([]byte, 16)); !errors.Is(err, net.ErrClosed) {
				t.Fatalf("read on a closed conn: %v, want net.ErrClosed", err)
			}
			if _, err := rc.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
				t.Fatalf("write on a closed conn: %v, want net.ErrClosed", err)
			}
		})
	}
}

// TestWrapFallback: a conn that is not a socket (here a pipe; TLS
// alike) is returned as it is.
func TestWrapFallback(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if c := Wrap(a); c != net.Conn(a) {
		t.Fatalf("Wrap(pipe) = %T, want the pipe itself", c)
	}
}

// TestDialContext: a dialed TCP or unix socket comes back raw and
// carries bytes; a dial nobody answers fails with the dialer's error.
func TestDialContext(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			addr := "127.0.0.1:0"
			if network == "unix" {
				addr = t.TempDir() + "/s"
			}
			ln, err := net.Listen(network, addr)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			accepted := make(chan net.Conn, 1)
			go func() {
				c, _ := ln.Accept()
				accepted <- c
			}()
			c, err := DialContext(context.Background(), network, ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, ok := c.(*Conn); !ok {
				t.Fatalf("DialContext returned %T, want *Conn", c)
			}
			s := <-accepted
			if s == nil {
				t.Fatal("accept failed")
			}
			defer s.Close()
			if _, err := c.Write([]byte("ping")); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 4)
			if _, err := io.ReadFull(s, buf); err != nil || string(buf) != "ping" {
				t.Fatalf("server read %q, %v", buf, err)
			}
		})
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nobody listens there now
	if c, err := DialContext(context.Background(), "tcp", addr); err == nil {
		c.Close()
		t.Fatalf("dial to closed %s succeeded", addr)
	}
}
