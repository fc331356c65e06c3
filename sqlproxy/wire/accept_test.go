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

// TestAcceptorCap: with Max connections open and logged in the next one
// goes to Refuse; once one ends, a new one is served again.
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
			a.Admit(c)
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

// TestAcceptorEvictsOldestPending: at the cap a new connection takes
// the place of the oldest one not logged in, never of a logged-in one;
// so strangers that send nothing cannot hold the slots.
func TestAcceptorEvictsOldestPending(t *testing.T) {
	a := &Acceptor{Max: 3, Refuse: refuse1040}
	addr := serveLogins(t, a)
	dial := func() net.Conn { return dialFrom(t, addr, "") }
	closedByServer := func(c net.Conn) bool { return closedWithin(c, 10*time.Second) }
	login := func(c net.Conn) { loginAs(t, c) }
	member := dial()
	login(member)
	s1, s2 := dial(), dial() // strangers: connected, silent
	late := dial()           // the cap is full: s1, the oldest stranger, makes room
	if !closedByServer(s1) {
		t.Fatal("the oldest silent connection was not evicted for a new one")
	}
	login(late)
	another := dial() // full again: s2 goes
	if !closedByServer(s2) {
		t.Fatal("the second silent connection was not evicted")
	}
	login(another)
	// Now every slot is logged in: a newcomer is refused, nobody evicted.
	refused := dial()
	p, err := (&Reader{R: refused}).ReadPacket()
	if err != nil || ParseError(p).Code != 1040 {
		t.Fatalf("with every slot logged in: %q %v, want 1040", p, err)
	}
	for _, c := range []net.Conn{member, late, another} {
		if _, err := c.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
			t.Fatalf("a logged-in connection lost its slot: %v", err)
		}
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

// TestAcceptorMaxPending: with MaxPending, connections before login
// have slots of their own: past MaxPending the oldest of them goes, even
// with logged-in slots free; a cap of logged-in ones (Max) refuses a
// newcomer, even with pending slots free.
func TestAcceptorMaxPending(t *testing.T) {
	a := &Acceptor{Max: 2, MaxPending: 2, Refuse: refuse1040}
	addr := serveLogins(t, a)
	dial := func() net.Conn { return dialFrom(t, addr, "") }
	login := func(c net.Conn) { loginAs(t, c) }
	closed := func(c net.Conn) bool { return closedWithin(c, 10*time.Second) }
	s1, s2 := dial(), dial() // two silent: every pending slot
	s3 := dial()             // the oldest silent one goes, though no one is logged in
	if !closed(s1) {
		t.Fatal("past MaxPending, the oldest silent connection was not evicted")
	}
	login(s2)
	login(s3) // Max logged in now
	p, err := (&Reader{R: dial()}).ReadPacket()
	if err != nil || ParseError(p).Code != 1040 {
		t.Fatalf("with Max logged in: %q %v, want 1040", p, err)
	}
}

// TestAcceptorEvictsFloodersFirst: at the cap, the connection that goes
// is the oldest of the address holding the most that have not logged
// in: a client from another address keeps its login in progress while
// a flood from one address renews its own connections.
func TestAcceptorEvictsFloodersFirst(t *testing.T) {
	a := &Acceptor{Max: 4}
	addr := serveLogins(t, a)
	client := dialFrom(t, addr, "127.0.0.2") // the oldest, logging in slowly
	var flood []net.Conn
	for range 3 * a.Max {
		flood = append(flood, dialFrom(t, addr, "127.0.0.1"))
	}
	// Every flood connection but the last Max-1 was evicted, oldest first.
	for i, c := range flood[:len(flood)-(a.Max-1)] {
		if !closedWithin(c, 10*time.Second) {
			t.Fatalf("flood connection %d kept its slot", i)
		}
	}
	if closedWithin(client, 200*time.Millisecond) {
		t.Fatal("the other address's connection was evicted for the flood")
	}
}

// refuse1040 answers a connection over the cap as MariaDB does.
func refuse1040(c net.Conn) {
	_, _ = c.Write(AppendPacket(nil, 0, PreHandshakeError(1040, "Too many connections")))
	c.Close()
}

// serveLogins runs a on a new listener and returns its address: a
// client that writes "login" is admitted and answered "in", then echoed
// until it ends.
func serveLogins(t *testing.T, a *Acceptor) string {
	t.Helper()
	ln := listen(t)
	t.Cleanup(func() { a.Close() })
	go func() {
		_ = a.Serve(ln, func(c net.Conn) {
			buf := make([]byte, 5)
			if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "login" {
				return
			}
			a.Admit(c)
			_, _ = c.Write([]byte("in"))
			_, _ = io.Copy(c, c)
		})
	}()
	return ln.Addr().String()
}

// dialFrom connects to addr from the loopback address src ("": any).
func dialFrom(t *testing.T, addr, src string) net.Conn {
	t.Helper()
	var d net.Dialer
	if src != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(src)}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// loginAs logs c in on a serveLogins listener.
func loginAs(t *testing.T, c net.Conn) {
	t.Helper()
	if _, err := c.Write([]byte("login")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 2)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "in" {
		t.Fatalf("login: %q %v", buf, err)
	}
	_ = c.SetReadDeadline(time.Time{})
}

// closedWithin reports whether the server closed c within wait.
func closedWithin(c net.Conn, wait time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(wait))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}
