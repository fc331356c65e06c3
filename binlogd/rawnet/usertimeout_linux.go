package rawnet

import (
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// SetUserTimeout sets TCP_USER_TIMEOUT: how long sent data (or a
// keepalive probe) may stay unacknowledged before the kernel aborts the
// connection with ETIMEDOUT. binlogd's peer links and sqlproxy's
// connections both bound a silent peer with it.
func SetUserTimeout(tc *net.TCPConn, d time.Duration) error {
	raw, err := tc.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d.Milliseconds()))
	}); err != nil {
		return err
	}
	return serr
}
