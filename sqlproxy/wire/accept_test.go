package wire

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// readAll waits (bounded) for the peer to send and close, returning
// what it sent.
func readAll(t *testing.T, c net.Conn) []byte {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return b
}

// TestAcceptorCap: with Max connections open the next one goes to
// Refuse; once one ends, a new one is served again.
func TestAcceptorCap(t *testing.T) {
	release := make(chan struct{})
	a := &Acceptor{Max: 1, Refuse: func(c net.Conn) {
		_, _ = c.Write(AppendPacket(nil, 0, PreHandshakeError(1040, "Too many connections")))
		c.Close()
	}}
	ln := listen(t)
	served := make(chan struct{}, 4)
	done := make(chan error, 1)
	go func() {
		done <- a.Serve(ln, func(c net.Conn) {
			served <- struct{}{}
			<-release
			_, _ = c.Write([]byte("hi"))
		})
	}()
	first, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	<-served
	second, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	p, err := (&Reader{R: second}).ReadPacket()
	if err != nil || ParseError(p).Code != 1040 {
		t.Fatalf("over the cap: %q %v", p, err)
	}
	second.Close()
	close(release)
	if b := readAll(t, first); string(b) != "hi" {
		t.Fatalf("first connection got %q (closed after its handler?)", b)
	}
	// The slot frees when the handler's goroutine ends; a third client
	// is served once it has.
	for {
		third, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		b := readAll(t, third)
		third.Close()
		if string(b) == "hi" {
			break
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("Serve after Close: %v", err)
	}
}

// TestAcceptorClose: Close closes every listener and open connection,
// waits for the handlers, and a Serve after it returns at once.
func TestAcceptorClose(t *testing.T) {
	a := &Acceptor{}
	lns := []net.Listener{listen(t), listen(t)}
	served := make(chan struct{}, 2)
	ended := make(chan struct{}, 2)
	done := make(chan error, 2)
	for _, ln := range lns {
		go func() {
			done <- a.Serve(ln, func(c net.Conn) {
				served <- struct{}{}
				_, _ = io.ReadAll(c) // until Close closes c
				ended <- struct{}{}
			})
		}()
	}
	for _, ln := range lns {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		<-served
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if len(ended) != 2 {
		t.Fatalf("Close returned with %d of 2 handlers ended", len(ended))
	}
	for range lns {
		if err := <-done; !errors.Is(err, ErrClosed) {
			t.Fatalf("Serve: %v", err)
		}
	}
	for _, ln := range lns {
		if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("listener still open: %v", err)
		}
	}
	ln := listen(t)
	defer ln.Close()
	if err := a.Serve(ln, func(net.Conn) {}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Serve after Close: %v", err)
	}
}
