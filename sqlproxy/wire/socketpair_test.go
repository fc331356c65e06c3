package wire

import (
	"net"
	"testing"

	"phxgo/binlogd/rawnet"
)

// socketPair returns both ends of a real connection on network ("tcp"
// or "unix"), closed when the test ends.
func socketPair(t *testing.T, network string) (client, server net.Conn) {
	t.Helper()
	client, server, err := rawnet.Pair(network, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
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
