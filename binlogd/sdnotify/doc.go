// Package sdnotify tells systemd about a service's state over the
// sd_notify protocol (a datagram to $NOTIFY_SOCKET), so a unit with
// Type=notify is reported started only when the node can serve, not when
// its process exists. Outside systemd ($NOTIFY_SOCKET unset) every call is
// a no-op. It is a few lines, not a dependency: the protocol is one
// datagram of "KEY=value" lines.
package sdnotify
