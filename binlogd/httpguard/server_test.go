package httpguard

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"phxgo/internal/testkit"
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
	go func() { _ = s.Serve(Listener(l, nil)) }()
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

// A new connection that sends nothing is closed after ReadHeaderTimeout:
// a slow flood of silent connections holds a slot that long only.
func TestSilentConnectionIsClosed(t *testing.T) {
	if ReadHeaderTimeout > 2*time.Second {
		t.Fatalf("ReadHeaderTimeout %v: a silent connection holds a slot that long", ReadHeaderTimeout)
	}
	s := Server(okHandler())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(Listener(l, nil)) }()
	defer s.Close()
	c := silent(t, l.Addr().String(), 1)[0]
	start := time.Now()
	if !closedByServer(c, ReadHeaderTimeout+10*time.Second) {
		t.Fatal("a silent connection outlived ReadHeaderTimeout by 10 s")
	}
	t.Logf("closed after %v", time.Since(start).Round(time.Millisecond))
}

// guarded serves h on a Server and Listener of the package, with
// ReadHeaderTimeout and IdleTimeout of a minute, so no connection of the
// test ends by a deadline: whatever ends one is the cap.
func guarded(t *testing.T, h http.Handler) (string, *CapListener) {
	t.Helper()
	s := Server(h)
	s.ReadHeaderTimeout, s.IdleTimeout = time.Minute, time.Minute
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gl := Listener(l, nil)
	go func() { _ = s.Serve(gl) }()
	t.Cleanup(func() { s.Close() })
	return l.Addr().String(), gl
}

// open is the number of connections gl holds slots for.
func (l *CapListener) openConns() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	testkit.Await(t, ctx, what, cond)
}

// silent opens n connections to addr that send nothing, closed when the
// test ends.
func silent(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	var cs []net.Conn
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		cs = append(cs, c)
	}
	return cs
}

// closedByServer reports whether the server closed c (a read fails
// within wait for another reason than the deadline).
func closedByServer(c net.Conn, wait time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(wait))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

func okHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
}

// At a cap of silent connections a scrape is answered at once: it takes
// the slot of the one that has waited longest for a request header.
// With Accept waiting at the cap (netutil.LimitListener) it was queued
// until ReadHeaderTimeout freed slots: the audit's 200 silent
// connections a second delayed the first /metrics answer by 8 s (here
// the deadline is a minute, past the test's own patience).
func TestScrapeAtCapOfSilentConnections(t *testing.T) {
	addr, gl := guarded(t, okHandler())
	cs := silent(t, addr, MaxConns)
	await(t, "the silent connections to be accepted", func() bool { return gl.openConns() == MaxConns })
	client := &http.Client{Timeout: 10 * time.Second}
	start := time.Now()
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape at the cap of silent connections: %v", err)
	}
	resp.Body.Close()
	t.Logf("answered in %v", time.Since(start).Round(time.Millisecond))
	if !closedByServer(cs[0], 10*time.Second) {
		t.Fatal("the oldest silent connection kept its slot")
	}
	if gl.evicted.Load() != 1 {
		t.Fatalf("evicted %d, want 1", gl.evicted.Load())
	}
	for i, c := range cs[1:] {
		if closedByServer(c, time.Millisecond) {
			t.Fatalf("silent connection %d closed, want only the oldest", i+1)
		}
	}
}

// A kept-alive connection between requests can be evicted like a new
// one: strangers who send one request each and then idle (IdleTimeout
// is 30 s) do not hold the slots either.
func TestScrapeAtCapOfIdleKeepAlives(t *testing.T) {
	addr, gl := guarded(t, okHandler())
	waiting := func() int {
		gl.mu.Lock()
		defer gl.mu.Unlock()
		return gl.waiting.Len()
	}
	var cs []net.Conn
	for i := range MaxConns { // one at a time, so cs[0] has idled longest
		c := silent(t, addr, 1)[0]
		await(t, "the new connection to be accepted", func() bool { return gl.openConns() == i+1 })
		fmt.Fprintf(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		resp.Body.Close()
		await(t, "the connection to idle", func() bool { return waiting() == i+1 })
		cs = append(cs, c)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape at the cap of idle keep-alives: %v", err)
	}
	resp.Body.Close()
	if !closedByServer(cs[0], 10*time.Second) {
		t.Fatal("the longest idle connection kept its slot")
	}
}

// A connection serving a request is never evicted: at a cap of them a
// newcomer is closed at once, and they all finish.
func TestListenerKeepsRequestsInProgress(t *testing.T) {
	release := make(chan struct{})
	var inside sync.WaitGroup
	inside.Add(MaxConns)
	addr, gl := guarded(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		inside.Done()
		<-release
		fmt.Fprintln(w, "ok")
	}))
	cs := silent(t, addr, MaxConns)
	for _, c := range cs {
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	}
	inside.Wait()
	extra := silent(t, addr, 1)[0]
	if !closedByServer(extra, 10*time.Second) {
		t.Fatal("a newcomer at a cap of requests in progress was kept")
	}
	if gl.refused.Load() != 1 || gl.evicted.Load() != 0 {
		t.Fatalf("refused %d, evicted %d; want 1, 0", gl.refused.Load(), gl.evicted.Load())
	}
	close(release)
	for i, c := range cs {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("request %d in progress at the cap: %v", i, err)
		}
		resp.Body.Close()
	}
}

// At the cap, a flood from one address evicts its own connections
// first: a connection from another address keeps its slot.
func TestListenerEvictsFloodersFirst(t *testing.T) {
	addr, gl := guarded(t, okHandler())
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	peer, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	await(t, "the other address's connection to be accepted", func() bool { return gl.openConns() == 1 })
	flood := silent(t, addr, 2*MaxConns)
	for i, c := range flood[:MaxConns+1] {
		if !closedByServer(c, 10*time.Second) {
			t.Fatalf("flood connection %d kept its slot", i)
		}
	}
	if closedByServer(peer, 200*time.Millisecond) {
		t.Fatal("the other address's connection was evicted for the flood")
	}
}
