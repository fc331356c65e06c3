package node

import (
	"log/slog"
	"net"
	"time"
)

// Dead peer links are closed after paxos.LinkTimeout: gRPC sets
// TCP_USER_TIMEOUT to its keepalive timeout, but only on a *net.TCPConn,
// and binlogd hands it raw sockets (package rawnet) both ways, dialled
// (dialFromSelf) and accepted (rpcListener). So gRPC set nothing on
// binlogd's links, and a peer that vanished (power loss, a partition
// that drops packets) with data unacknowledged kept its connection for
// the kernel's retransmission timeout, ~15 min with tcp_retries2's
// default, instead of LinkTimeout; keepalive pings could not end it
// sooner, since TCP retransmits them like the rest. binlogd sets the
// option itself on the *net.TCPConn before wrapping it. Keepalive probes
// stay as the net package sets them (15 s idle, on dialled and accepted
// sockets); gRPC's keepalive pings find idle dead links.

// setLinkTimeout sets TCP_USER_TIMEOUT on c to d when c is a TCP socket
// (d <= 0, or another conn: nothing to do).
func setLinkTimeout(c net.Conn, d time.Duration) error {
	tc, ok := c.(*net.TCPConn)
	if !ok || d <= 0 {
		return nil
	}
	return setUserTimeout(tc, d)
}

// linkTimeoutListener sets TCP_USER_TIMEOUT to d on each connection it
// accepts (setLinkTimeout). A socket where that fails is served anyway,
// as gRPC itself would not be able to do better, and the failure logged.
type linkTimeoutListener struct {
	net.Listener
	d   time.Duration
	log *slog.Logger
}

func (l linkTimeoutListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if err := setLinkTimeout(c, l.d); err != nil && l.log != nil {
		l.log.Warn("gRPC port: could not set TCP_USER_TIMEOUT on an accepted connection; a peer that vanishes holds it until TCP gives up", "remote", c.RemoteAddr().String(), "err", err)
	}
	return c, nil
}
