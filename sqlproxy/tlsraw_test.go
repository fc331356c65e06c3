package sqlproxy

import (
	"net"
	"testing"

	"phxgo/binlogd/rawnet"
	"phxgo/sqlproxy/wire"
)

// A TLS session started over a socket writes its records through the
// raw path (package rawnet), as the plain connection did: through the
// net package, every record written to a client, a hop or another
// node's MariaDB woke the runtime's sysmon.
func TestTLSOverSocketWritesRaw(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	bc := newBufConn(wire.NewConnRaw(c, 1024))
	if _, ok := bc.w.(*rawnet.Conn); !ok {
		t.Fatalf("TLS records are written through %T, want *rawnet.Conn", bc.w)
	}
	if _, err := bc.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1)
	if _, err := s.Read(buf); err != nil || buf[0] != 'x' {
		t.Fatalf("read %q, %v", buf, err)
	}
}
