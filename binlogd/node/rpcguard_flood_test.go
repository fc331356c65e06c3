package node

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"phxgo/internal/testkit"
	"phxgo/paxos"
)

// The stranger of these tests opens TCP connections to the gRPC port,
// sends a TLS ClientHello on each and then nothing: the server has done
// its half of the handshake and waits, holding the handshake's state.

// clientHello returns the bytes of a TLS ClientHello, as a stranger
// without a certificate would send.
func clientHello(t *testing.T) []byte {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	rec := &recordConn{Conn: a}
	_ = tls.Client(rec, &tls.Config{ServerName: "127.0.0.1", InsecureSkipVerify: true}).Handshake()
	if rec.buf.Len() == 0 {
		t.Fatal("no ClientHello written")
	}
	return rec.buf.Bytes()
}

// recordConn keeps what is written to it and fails every read: the
// handshake stops after its first flight.
type recordConn struct {
	net.Conn
	buf bytes.Buffer
}

func (c *recordConn) Write(p []byte) (int, error) { c.buf.Write(p); return len(p), nil }
func (c *recordConn) Read([]byte) (int, error)    { return 0, errors.New("recordConn: no reads") }

// halfOpen dials addr from src (nil: any) and sends hello. The
// connection is read (and dropped) in a goroutine until the server
// closes it; done is closed then. The test's cleanup closes it.
func halfOpen(t *testing.T, addr string, src net.IP, hello []byte) (c net.Conn, done chan struct{}, err error) {
	d := net.Dialer{}
	if src != nil {
		d.LocalAddr = &net.TCPAddr{IP: src}
	}
	if c, err = d.Dial("tcp", addr); err != nil {
		return nil, nil, err
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Write(hello); err != nil {
		return nil, nil, err
	}
	done = make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
		}
	}()
	return c, done, nil
}

// A flood of half-open handshakes holds at most maxRPCHandshakes of
// them: each costs binlogd about 64 KB until it ends, and 2,048 (the one
// cap there was) took binlogd from 33 to 164 MB (audit, December 2026).
// The newest stay, every older one is closed for a newcomer, and a peer
// with a certificate still gets in.
func TestRPCListenerCapsHandshakes(t *testing.T) {
	addr, cli, rl := tlsHealthServerListener(t, maxRPCConns, maxRPCHandshakes)
	opt := grpc.WithTransportCredentials(credentials.NewTLS(cli))
	hello := clientHello(t)
	const n = 3 * maxRPCHandshakes
	done := make([]chan struct{}, n)
	for i := range done {
		_, d, err := halfOpen(t, addr, nil, hello)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		done[i] = d
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	testkit.Await(t, ctx, "the server to close all but the newest handshakes", func() bool {
		return rl.evicted.Load() == n-maxRPCHandshakes
	})
	for i, d := range done[:n-maxRPCHandshakes] {
		select {
		case <-d:
		case <-ctx.Done():
			t.Fatalf("half-open connection %d of %d still open, want the oldest %d closed", i, n, n-maxRPCHandshakes)
		}
	}
	rl.mu.Lock()
	pending := rl.pending.Len()
	rl.mu.Unlock()
	if pending != maxRPCHandshakes {
		t.Fatalf("%d connections in their handshake, want the cap's %d", pending, maxRPCHandshakes)
	}
	if err := healthCheck(ctx, addr, opt); err != nil {
		t.Fatalf("health check at the cap of half-open handshakes: %v", err)
	}
}

// During a flood of half-open handshakes at the audit's 5,000 a second
// from one address, a peer from another address with a certificate and
// the Paxos links' redial settings gets in: its handshake is never the
// one evicted while the flood holds more. (From the flood's own address
// a handshake is kept only if it ends before 128 newer ones arrive,
// 25 ms; under -race, in one process with the flood, it does not.)
func TestRPCListenerAdmitsPeerDuringFlood(t *testing.T) {
	addr, cli, rl := tlsHealthServerListener(t, maxRPCConns, maxRPCHandshakes)
	opt := grpc.WithTransportCredentials(credentials.NewTLS(cli))
	hello := clientHello(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	floodCtx, stopFlood := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // 2 connections a millisecond: 5 starved the handshake under -race on a loaded CI host (20 s)
		defer wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-floodCtx.Done():
				return
			case <-tick.C:
			}
			for range 2 {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					continue // backlog full: the flood outpaces the accepts
				}
				c.Write(hello)
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer c.Close()
					defer context.AfterFunc(floodCtx, func() { c.Close() })()
					buf := make([]byte, 4096)
					for {
						if _, err := c.Read(buf); err != nil {
							return
						}
					}
				}()
			}
		}
	}()
	defer func() { stopFlood(); wg.Wait() }()
	testkit.Await(t, ctx, "the flood to fill the handshakes' cap", func() bool { return rl.evicted.Load() > maxRPCHandshakes })

	dial := func(ctx context.Context, a string) (net.Conn, error) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
		return d.DialContext(ctx, "tcp", a)
	}
	cc, err := grpc.NewClient(addr, append(paxos.PeerDialOptions(paxos.DefaultConfig()), opt, grpc.WithContextDialer(dial))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	start := time.Now()
	cctx, ccancel := context.WithTimeout(ctx, 20*time.Second)
	defer ccancel()
	if _, err := healthpb.NewHealthClient(cc).Check(cctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true)); err != nil {
		t.Fatalf("health check during the flood (%d handshakes evicted): %v", rl.evicted.Load(), err)
	}
	t.Logf("peer in after %v (%d handshakes evicted so far)", time.Since(start).Round(time.Millisecond), rl.evicted.Load())
}

// A handshake that ends when every established slot is taken fails: the
// cap of established connections holds however many handshakes were
// under way when it filled.
func TestRPCListenerRefusesHandshakePastCap(t *testing.T) {
	addr, cli, rl := tlsHealthServerListener(t, 1, maxRPCHandshakes)
	opt := grpc.WithTransportCredentials(credentials.NewTLS(cli))
	early, err := net.Dial("tcp", addr) // accepted while a slot is free
	if err != nil {
		t.Fatal(err)
	}
	defer early.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	testkit.Await(t, ctx, "the early connection to be accepted", func() bool {
		rl.mu.Lock()
		defer rl.mu.Unlock()
		return rl.pending.Len() == 1
	})
	cc, err := grpc.NewClient(addr, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	if _, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("the first client: %v", err)
	}
	// The early connection now finishes a handshake with a certificate.
	h2 := cli.Clone()
	h2.NextProtos = []string{"h2"} // gRPC's server refuses a handshake without it
	tc := tls.Client(early, h2)
	_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
	_ = tc.Handshake() // TLS 1.3: the client may finish before the server refuses
	if _, err := tc.Read(make([]byte, 1)); err == nil {
		t.Fatal("a handshake that ended at the cap of established connections was served")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("a handshake that ended at the cap of established connections was left open")
	}
	if rl.refused.Load() != 1 {
		t.Fatalf("refused %d, want 1", rl.refused.Load())
	}
	if _, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("the established client after the refusal: %v", err)
	}
}
