package sqlproxy

import (
	"context"
	"net"
	"testing"
)

func TestDialFrom(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer := make(chan string, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			peer <- c.RemoteAddr().(*net.TCPAddr).IP.String()
			c.Close()
		}
	}()
	for _, tc := range []struct {
		src  net.IP
		want string
	}{
		{net.ParseIP("127.0.0.3"), "127.0.0.3"},
		{nil, "127.0.0.1"},
		{net.IPv4zero, "127.0.0.1"},
	} {
		c, err := DialFrom(tc.src, 0)(context.Background(), "tcp", ln.Addr().String())
		if err != nil {
			t.Fatalf("src %v: %v", tc.src, err)
		}
		c.Close()
		if got := <-peer; got != tc.want {
			t.Errorf("src %v: peer sees %s, want %s", tc.src, got, tc.want)
		}
	}
}
