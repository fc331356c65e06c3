package wire

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// bearStall lifts TCP_USER_TIMEOUT from c's socket while a LOAD DATA
// LOCAL file streams to it, and returns what puts it back.
//
// Why: the proxy bounds a silent peer with TCP_USER_TIMEOUT (sqlproxy
// peer.go, default 5 s), and Linux applies it to a zero window too (a
// live peer that ACKs but does not read). MariaDB stops reading a file
// while a row waits for a lock (a second load behind another's AUTO-INC
// lock, up to innodb_lock_wait_timeout) or the disk is slow: after 5 s
// the kernel aborted the connection, the client got "connection reset
// by peer" and an outcome it could not know (Jepsen big, issue 20.4),
// where MariaDB would have answered 1467 or loaded the file. Keepalive
// still ends the connection to a peer that stops answering while no
// data is queued; with data queued, a dead peer is found by the
// kernel's retransmission limit (tcp_retries2, minutes). A conn with
// no TCP socket under it (unix, a test pipe) is left alone.
func bearStall(c net.Conn) (restore func()) {
	rc := rawConnOf(c)
	if rc == nil {
		return func() {}
	}
	old := -1
	_ = rc.Control(func(fd uintptr) {
		v, err := unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT)
		if err == nil && v > 0 && unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, 0) == nil {
			old = v
		}
	})
	if old < 0 {
		return func() {}
	}
	return func() {
		_ = rc.Control(func(fd uintptr) {
			_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, old)
		})
	}
}

// rawConnOf finds the socket under c, through TLS and any wrapper that
// reports the conn it wraps (NetConn, as *tls.Conn does).
func rawConnOf(c net.Conn) syscall.RawConn {
	for range 8 {
		switch v := c.(type) {
		case *net.TCPConn:
			rc, err := v.SyscallConn()
			if err != nil {
				return nil
			}
			return rc
		case interface{ NetConn() net.Conn }:
			c = v.NetConn()
		default:
			return nil
		}
	}
	return nil
}
