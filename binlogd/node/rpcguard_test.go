package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"reflect"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"phxgo/binlogd/mtls/mtlstest"
	"phxgo/binlogd/rawnet"
)

// A connection that never starts its handshake is closed after
// rpcHandshakeTimeout, not gRPC's default 120 s.
func TestRPCGuardClosesSilentConnections(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(rpcGuardOptions()...)
	go func() { _ = gs.Serve(rpcListener(l, maxRPCConns, maxRPCHandshakes, false, nil, nil)) }()
	defer gs.Stop()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(rpcHandshakeTimeout + 10*time.Second))
	buf := make([]byte, 64)
	for {
		if _, err := c.Read(buf); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("a silent connection was still open after %v", time.Since(start))
			}
			break // closed by the server
		}
	}
	if d := time.Since(start); d > rpcHandshakeTimeout+5*time.Second {
		t.Fatalf("closed after %v, want about %v", d, rpcHandshakeTimeout)
	}
}

// The connections the gRPC server reads are raw sockets under the cap
// (package rawnet), not the net package's: wrapped the other way round,
// every Paxos message read woke the runtime's sysmon.
func TestRPCListenerKeepsRawSockets(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rl := rpcListener(l, maxRPCConns, maxRPCHandshakes, true, nil, nil)
	defer rl.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ac, err := rl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close()
	if !readsRaw(ac) {
		t.Fatalf("accepted %T reads through the net package, want a *rawnet.Conn inside", ac)
	}
}

// readsRaw reports whether c is, or embeds (as netutil's capped
// connection does), a *rawnet.Conn.
func readsRaw(c net.Conn) bool {
	for {
		if _, ok := c.(*rawnet.Conn); ok {
			return true
		}
		v := reflect.ValueOf(c)
		if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
			return false
		}
		f := v.Elem().FieldByName("Conn")
		if !f.IsValid() || !f.CanInterface() {
			return false
		}
		inner, ok := f.Interface().(net.Conn)
		if !ok || inner == nil {
			return false
		}
		c = inner
	}
}

// tlsHealthServer serves gRPC health over mutual TLS on an rpcListener
// capped at max established connections and maxPending in their
// handshake, with a handshake timeout of a minute (far beyond the
// test), and returns its address and a client dial option.
func tlsHealthServer(t *testing.T, max, maxPending int) (string, grpc.DialOption) {
	addr, cli, _ := tlsHealthServerListener(t, max, maxPending)
	return addr, grpc.WithTransportCredentials(credentials.NewTLS(cli))
}

// tlsHealthServerListener is tlsHealthServer that returns the client's
// TLS config and the listener (its counters).
func tlsHealthServerListener(t *testing.T, max, maxPending int) (string, *tls.Config, *capListener) {
	t.Helper()
	ca := mtlstest.MakeCA(t, 2)
	srv := mtlstest.Load(t, mtlstest.Files(ca, 1))
	cli := mtlstest.Load(t, mtlstest.Files(ca, 2))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(grpc.ConnectionTimeout(time.Minute),
		grpc.Creds(establishOnHandshake{credentials.NewTLS(srv.Server())}))
	healthpb.RegisterHealthServer(gs, health.NewServer())
	rl := rpcListener(l, max, maxPending, true, nil, nil)
	go func() { _ = gs.Serve(rl) }()
	t.Cleanup(gs.Stop)
	return l.Addr().String(), cli.Client("127.0.0.1"), rl
}

func healthCheck(ctx context.Context, addr string, opt grpc.DialOption) error {
	cc, err := grpc.NewClient(addr, opt)
	if err != nil {
		return err
	}
	defer cc.Close()
	_, err = healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	return err
}

// At the cap, a peer with a certificate still gets in: its connection
// takes the slot of the oldest one that never finished a handshake,
// which is closed. A plain cap made it wait until a handshake timeout
// freed a slot, which a stranger renewing silent connections prevents.
func TestRPCListenerEvictsOldestHandshake(t *testing.T) {
	const max = 4
	addr, opt := tlsHealthServer(t, maxRPCConns, max)
	var silent []net.Conn
	for range max {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		silent = append(silent, c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := healthCheck(ctx, addr, opt); err != nil {
		t.Fatalf("health check at the cap of silent connections: %v", err)
	}
	// The oldest silent connection was closed for it.
	_ = silent[0].SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := silent[0].Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Fatalf("oldest silent connection: read %v, want it closed", err)
	}
}

// Connections past their handshake are never evicted: at a cap of them
// a newcomer is closed at once.
func TestRPCListenerKeepsEstablished(t *testing.T) {
	const max = 2
	addr, opt := tlsHealthServer(t, max, maxRPCHandshakes)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var conns []*grpc.ClientConn
	for range max {
		cc, err := grpc.NewClient(addr, opt)
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		if _, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, cc)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Fatalf("newcomer at a cap of established connections: read %v, want it closed", err)
	}
	for i, cc := range conns { // both still work
		if _, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
			t.Fatalf("established connection %d: %v", i, err)
		}
	}
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && !ne.Timeout()
}

// Failed handshakes from ever new addresses neither grow loggedCreds'
// memory of hosts past maxLoggedHosts nor write a line each (audit:
// random 127.x.y.z sources, 5,000 lines in 5 s).
func TestLoggedCredsBounded(t *testing.T) {
	var lines int
	var mu sync.Mutex
	h := slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		lines++
		mu.Unlock()
		return len(p), nil
	}), nil)
	c := newLoggedCreds(nil, slog.New(h))
	const tries = 3 * maxLoggedHosts
	for i := range tries {
		c.warn("refused", fmt.Sprintf("127.%d.%d.1:4000", i/256, i%256), errors.New("no certificate"))
	}
	if len(c.last) > maxLoggedHosts {
		t.Fatalf("remembers %d hosts, want at most %d", len(c.last), maxLoggedHosts)
	}
	if lines > maxLoggedHosts {
		t.Fatalf("%d lines for %d addresses, want at most %d", lines, tries, maxLoggedHosts)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// At the cap, a flood from one address evicts its own handshakes first:
// a connection from another address keeps its slot.
func TestRPCListenerEvictsFloodersFirst(t *testing.T) {
	const max = 4
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rl := rpcListener(l, maxRPCConns, max, true, nil, nil)
	defer rl.Close()
	go func() {
		for {
			c, err := rl.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	dialFrom := func(src string) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		c, err := d.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	closed := func(c net.Conn, wait time.Duration) bool {
		_ = c.SetReadDeadline(time.Now().Add(wait))
		_, err := c.Read(make([]byte, 1))
		var ne net.Error
		return err != nil && !(errors.As(err, &ne) && ne.Timeout())
	}
	peer := dialFrom("127.0.0.2")
	var flood []net.Conn
	for range 3 * max {
		flood = append(flood, dialFrom("127.0.0.1"))
	}
	for i, c := range flood[:len(flood)-(max-1)] {
		if !closed(c, 10*time.Second) {
			t.Fatalf("flood connection %d kept its slot", i)
		}
	}
	if closed(peer, 200*time.Millisecond) {
		t.Fatal("the other address's handshake was evicted for the flood")
	}
}
