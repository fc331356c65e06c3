package sqlproxy

import (
	"net"
	"time"

	"phxgo/binlogd/rawnet"
)

// setPeerTimeout makes the kernel fail c after about d without an answer
// from the peer, even when a partition drops packets silently (no RST):
// keepalive probes start after max(1s, d/5) of idleness and repeat at that
// interval, and TCP_USER_TIMEOUT (Linux) aborts the connection once data
// or a probe has gone unacknowledged for d. A blocked read then fails, so
// the session ends and closes its backend (an open transaction rolls back
// and frees its locks). d <= 0 or a non-TCP conn: nothing changes.
func setPeerTimeout(c net.Conn, d time.Duration) error {
	return setPeerTimeouts(c, d, d)
}

// clientWriteStall is how long a client may leave a result unread
// (its receive window at zero) before the kernel aborts the connection:
// MariaDB's net_write_timeout default, the time a client talking to
// MariaDB directly would get. TCP_USER_TIMEOUT counts a zero window as
// no answer, so at PeerTimeout a client that paused reading a big result
// for 5 s lost its connection.
const clientWriteStall = 60 * time.Second

// setClientPeerTimeout is setPeerTimeout for a client's connection: an
// idle dead client is still found by keepalive after about d, but one
// that has data in flight gets max(d, clientWriteStall).
func setClientPeerTimeout(c net.Conn, d time.Duration) error {
	return setPeerTimeouts(c, d, max(d, clientWriteStall))
}

func setPeerTimeouts(c net.Conn, d, user time.Duration) error {
	tc, ok := c.(*net.TCPConn)
	if !ok || d <= 0 {
		return nil
	}
	probe := max(time.Second, d/5)
	if err := tc.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: probe,
		Interval: probe, Count: max(1, int(d/probe))}); err != nil {
		return err
	}
	return rawnet.SetUserTimeout(tc, user)
}
