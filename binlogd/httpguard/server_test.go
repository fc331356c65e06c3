package httpguard

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"
)

// A kept-alive connection that sends no next request is closed: the
// audit's 50 idle connections stayed open for good without IdleTimeout.
func TestIdleKeepAliveIsClosed(t *testing.T) {
	s := Server(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") }))
	if s.IdleTimeout <= 0 || s.ReadHeaderTimeout <= 0 || s.WriteTimeout <= 0 {
		t.Fatalf("idle %v, header %v: a connection could stay open with no deadline", s.IdleTimeout, s.ReadHeaderTimeout)
	}
	s.IdleTimeout = 200 * time.Millisecond // the test's own: 30 s is the product's
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(Listener(l)) }()
	defer s.Close()

	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("server sent bytes on an idle connection")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("an idle kept-alive connection was still open after 10 s")
	}
}

// Past MaxConns the listener accepts nothing until a connection ends.
func TestListenerCapsConnections(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ll := Listener(l)
	accepted := make(chan net.Conn, MaxConns+1)
	go func() {
		for {
			c, err := ll.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	var clients []net.Conn
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	for i := 0; i <= MaxConns; i++ {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	var server []net.Conn
	for len(server) < MaxConns {
		server = append(server, <-accepted)
	}
	select {
	case <-accepted:
		t.Fatalf("connection %d accepted past the cap of %d", MaxConns+1, MaxConns)
	case <-time.After(300 * time.Millisecond):
	}
	server[0].Close()
	select {
	case c := <-accepted:
		c.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting connection was not accepted after one ended")
	}
	for _, c := range server[1:] {
		c.Close()
	}
}
