package sqlproxy

import (
	"context"
	"net"
	"time"

	"phxgo/binlogd/config"
)

// DialFunc opens an outgoing TCP connection; the shape of
// net.Dialer.DialContext and of go-sql-driver's Config.DialFunc.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// DialFrom returns a DialFunc that binds every connection's local address
// to src (any port), so this node's traffic carries its own address: the
// Jepsen harness cuts links by address pairs, and a backend sees the
// member, not whatever source address the kernel picks. A nil or
// unspecified src leaves the choice to the kernel. A loopback src is not
// applied to a non-loopback destination IP (it could not be routed there).
func DialFrom(src net.IP, timeout time.Duration) DialFunc {
	d := net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	if src == nil || src.IsUnspecified() {
		return d.DialContext
	}
	bound := d
	bound.LocalAddr = &net.TCPAddr{IP: src}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if src.IsLoopback() {
			if host, _, err := net.SplitHostPort(addr); err == nil {
				if ip := net.ParseIP(host); ip != nil && !ip.IsLoopback() {
					return d.DialContext(ctx, network, addr)
				}
			}
		}
		return bound.DialContext(ctx, network, addr)
	}
}

// ListenSourceIP is the default source address for a proxy listening on
// addr: its host when that is a specific IP, else nil (kernel's choice);
// the same rule as binlogd's peer dials (config.SourceIP).
func ListenSourceIP(addr string) net.IP {
	return config.SourceIP(addr)
}
