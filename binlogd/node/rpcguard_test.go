package node

import (
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
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
