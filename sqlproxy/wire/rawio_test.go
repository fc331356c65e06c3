package wire

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// socketPair returns both ends of a real connection on network ("tcp"
// or "unix"): rawIO only takes over TCP and unix sockets.
func socketPair(t *testing.T, network string) (client, server net.Conn) {
	t.Helper()
	addr := "127.0.0.1:0"
	if network == "unix" {
		addr = filepath.Join(t.TempDir(), "s")
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() { c, err := ln.Accept(); ch <- res{c, err} }()
	client, err = net.Dial(network, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Cleanup(func() { client.Close(); r.c.Close() })
	return client, r.c
}

// TestRawIO: the raw path behaves as net.Conn where the proxy relies on
// it: a write larger than the socket buffers completes (EAGAIN waits in
// the netpoller), the reader gets every byte then io.EOF, a read
// deadline ends a read with os.ErrDeadlineExceeded, and a read on a
// closed conn fails with net.ErrClosed.
func TestRawIO(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			a, b := socketPair(t, network)
			ra, rb := newRawIO(a), newRawIO(b)
			if _, ok := ra.(*rawIO); !ok {
				t.Fatalf("newRawIO(%T) = %T, want *rawIO", a, ra)
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
			rc := newRawIO(c)
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

// TestNewConnRawFallback: a conn that is not a socket (here a pipe; TLS
// alike) keeps the net.Conn path.
func TestNewConnRawFallback(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if c := NewConnRaw(a, 256); c.rw != net.Conn(a) {
		t.Fatalf("NewConnRaw(pipe) reads through %T, want the pipe itself", c.rw)
	}
}
