package sqlproxy

import (
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSetPeerTimeout checks the socket options a dead-peer bound relies
// on: keepalive probes after 1 s idle, every 1 s, and TCP_USER_TIMEOUT.
func TestSetPeerTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := setPeerTimeout(c, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	opts := []struct {
		name       string
		level, opt int
	}{
		{"SO_KEEPALIVE", unix.SOL_SOCKET, unix.SO_KEEPALIVE},
		{"TCP_KEEPIDLE", unix.IPPROTO_TCP, unix.TCP_KEEPIDLE},
		{"TCP_KEEPINTVL", unix.IPPROTO_TCP, unix.TCP_KEEPINTVL},
		{"TCP_KEEPCNT", unix.IPPROTO_TCP, unix.TCP_KEEPCNT},
		{"TCP_USER_TIMEOUT", unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT},
	}
	if err := raw.Control(func(fd uintptr) {
		for _, o := range opts {
			v, err := unix.GetsockoptInt(int(fd), o.level, o.opt)
			if err != nil {
				t.Errorf("%s: %v", o.name, err)
			}
			got[o.name] = v
		}
	}); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"SO_KEEPALIVE": 1, "TCP_KEEPIDLE": 1, "TCP_KEEPINTVL": 1, "TCP_KEEPCNT": 5, "TCP_USER_TIMEOUT": 5000}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d", k, got[k], v)
		}
	}
}
