package node

import (
	"net"
	"reflect"
	"testing"
	"time"

	"google.golang.org/grpc"

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
	go func() { _ = gs.Serve(rpcListener(l)) }()
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
	rl := rpcListener(l)
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
