package wire

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"phxgo/binlogd/rawnet"
)

// noHang runs f and fails the test if it has not returned after a long
// while: the cases below are about a wait that must end.
func noHang(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: still waiting after 30 s", what)
	}
}

// TestWriteRequest: on a raw socket, WriteRequest returns once the
// answer is there, so reading it costs no read that finds nothing (a
// plain flush followed by the read does); a request bigger than the
// socket buffers still arrives whole and its answer is read; a peer
// that closes instead of answering, or had closed before, ends the
// wait and the read fails; so does closing the conn during the wait.
func TestWriteRequest(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			// answerer: reads one packet on srv, waits, answers "re:"+payload.
			answer := func(srv net.Conn) chan error {
				ch := make(chan error, 1)
				go func() {
					sc := NewConn(srv)
					p, err := sc.ReadPacket()
					if err == nil {
						time.Sleep(20 * time.Millisecond) // the answer comes well after the request
						sc.Seq = 1
						err = sc.WriteFlush(append([]byte("re:"), p[:min(len(p), 8)]...))
					}
					ch <- err
				}()
				return ch
			}
			for _, tc := range []struct {
				name    string
				size    int
				request bool
			}{{"request", 10, true}, {"flush", 10, false}, {"big request", 4 << 20, true}} {
				cl, srv := socketPair(t, network)
				c := NewConnRaw(cl, DefaultBufferSize)
				r := c.rw.(*rawnet.Conn)
				done := answer(srv)
				payload := bytes.Repeat([]byte("q"), tc.size)
				noHang(t, tc.name, func() {
					var err error
					if tc.request {
						err = c.WriteRequest(payload)
					} else {
						err = c.WriteFlush(payload)
					}
					if err != nil {
						t.Errorf("%s: write: %v", tc.name, err)
						return
					}
					p, err := c.ReadPacket()
					if err != nil || !bytes.Equal(p, append([]byte("re:"), payload[:min(len(payload), 8)]...)) {
						t.Errorf("%s: answer %q, %v", tc.name, p, err)
					}
				})
				if err := <-done; err != nil {
					t.Fatalf("%s: peer: %v", tc.name, err)
				}
				switch {
				case tc.name == "request" && r.EmptyReads() != 0:
					t.Errorf("request: %d reads found nothing, want 0", r.EmptyReads())
				case tc.name == "flush" && r.EmptyReads() == 0:
					t.Errorf("flush: no read found nothing; the count does not work")
				}
			}

			// The peer reads the request and closes without answering.
			cl, srv := socketPair(t, network)
			c := NewConnRaw(cl, DefaultBufferSize)
			go func(srv net.Conn) { _, _ = NewConn(srv).ReadPacket(); srv.Close() }(srv)
			noHang(t, "peer closes", func() {
				err := c.WriteRequest([]byte("x"))
				if err == nil {
					_, err = c.ReadPacket()
				}
				if err == nil {
					t.Errorf("peer closes: no error")
				}
			})

			// The peer closed before the request.
			cl, srv = socketPair(t, network)
			c = NewConnRaw(cl, DefaultBufferSize)
			srv.Close()
			noHang(t, "peer closed before", func() {
				err := c.WriteRequest([]byte("x"))
				if err == nil {
					_, err = c.ReadPacket()
				}
				if err == nil {
					t.Errorf("peer closed before: no error")
				}
			})

			// Closed on our side during the wait (a session abandoning its backend).
			cl, _ = socketPair(t, network)
			c = NewConnRaw(cl, DefaultBufferSize)
			go func(cl net.Conn) { time.Sleep(20 * time.Millisecond); cl.Close() }(cl)
			noHang(t, "closed during the wait", func() {
				err := c.WriteRequest([]byte("x"))
				if err == nil {
					_, err = c.ReadPacket()
				}
				if !errors.Is(err, net.ErrClosed) {
					t.Errorf("closed during the wait: %v, want net.ErrClosed", err)
				}
			})
		})
	}
}

// TestWriteRequestFallback: a conn that is not a raw socket (a pipe, TLS)
// just flushes.
func TestWriteRequestFallback(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c := NewConnRaw(a, 256)
	go func() { _, _ = io.Copy(io.Discard, b) }()
	if err := c.WriteRequest([]byte("x")); err != nil {
		t.Fatal(err)
	}
}

// TestWritePacketAllocs: framing a packet into a Conn's buffer allocates
// nothing (the header went through io.Writer and escaped, one
// allocation per relayed statement).
func TestWritePacketAllocs(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c := NewConn(a)
	payload := []byte("\x17\x01\x00\x00\x00\x00\x01\x00\x00\x00")
	if n := testing.AllocsPerRun(100, func() {
		c.W.Reset(io.Discard)
		_ = c.WritePacket(payload)
	}); n != 0 {
		t.Fatalf("WritePacket: %v allocations, want 0", n)
	}
}
