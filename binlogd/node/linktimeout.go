package node

import (
	"context"
	"log/slog"
	"net"
	"time"

	"phxgo/binlogd/rawnet"
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
// are the net package's default (15 s idle, on dialled and accepted
// sockets; acceptedLink sets them on the gRPC port's); gRPC's keepalive
// pings find idle dead links.

// setLinkTimeout sets TCP_USER_TIMEOUT on c to d when c is a TCP socket
// (d <= 0, or another conn: nothing to do).
func setLinkTimeout(c net.Conn, d time.Duration) error {
	tc, ok := c.(*net.TCPConn)
	if !ok || d <= 0 {
		return nil
	}
	return rawnet.SetUserTimeout(tc, d)
}

// acceptedLink prepares a socket the gRPC port accepted, once
// rpcListener has admitted it (its prepare hook): keepalive probes as
// the net package sets them by default (15 s idle), which the port's
// listener leaves off so that a connection refused at accept costs no
// setsockopt (four of them were 12% of binlogd's CPU under a flood),
// and TCP_USER_TIMEOUT d (setLinkTimeout). A socket where either fails
// is served anyway, as gRPC itself would not be able to do better, and
// the failure logged.
type acceptedLink struct {
	d   time.Duration
	log *slog.Logger
}

// listenRPC listens on addr as the gRPC port does: keepalive off at
// accept, for acceptedLink.prepare to set.
func listenRPC(ctx context.Context, addr string) (net.Listener, error) {
	return (&net.ListenConfig{KeepAlive: -1}).Listen(ctx, "tcp", addr)
}

func (a acceptedLink) prepare(c net.Conn) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return
	}
	if err := tc.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true}); err != nil && a.log != nil {
		a.log.Warn("gRPC port: could not turn on TCP keepalive on an accepted connection", "remote", c.RemoteAddr().String(), "err", err)
	}
	if err := setLinkTimeout(c, a.d); err != nil && a.log != nil {
		a.log.Warn("gRPC port: could not set TCP_USER_TIMEOUT on an accepted connection; a peer that vanishes holds it until TCP gives up", "remote", c.RemoteAddr().String(), "err", err)
	}
}
