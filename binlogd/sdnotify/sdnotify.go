package sdnotify

import (
	"fmt"
	"net"
	"os"
	"strings"
)

// Notifier sends state lines to systemd's notification socket.
type Notifier struct {
	addr *net.UnixAddr // nil: not under systemd
}

// FromEnv returns a Notifier for $NOTIFY_SOCKET (an abstract socket when
// it starts with "@"). Without the variable the Notifier does nothing.
func FromEnv() *Notifier {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return &Notifier{}
	}
	if path[0] == '@' {
		path = "\x00" + path[1:]
	}
	return &Notifier{addr: &net.UnixAddr{Name: path, Net: "unixgram"}}
}

// Enabled reports whether a notification socket was given.
func (n *Notifier) Enabled() bool { return n != nil && n.addr != nil }

// Notify sends the given "KEY=value" lines as one datagram.
func (n *Notifier) Notify(lines ...string) error {
	if !n.Enabled() {
		return nil
	}
	for _, l := range lines {
		if strings.ContainsRune(l, '\n') {
			return fmt.Errorf("sdnotify: line %q holds a newline", l)
		}
	}
	c, err := net.DialUnix("unixgram", nil, n.addr)
	if err != nil {
		return fmt.Errorf("sdnotify: %w", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(strings.Join(lines, "\n") + "\n")); err != nil {
		return fmt.Errorf("sdnotify: %w", err)
	}
	return nil
}

// Ready says the service is up; status is shown by `systemctl status`.
func (n *Notifier) Ready(status string) error { return n.Notify("READY=1", "STATUS="+oneLine(status)) }

// Status updates the status line only.
func (n *Notifier) Status(status string) error { return n.Notify("STATUS=" + oneLine(status)) }

// Stopping says the service began to stop.
func (n *Notifier) Stopping(status string) error {
	return n.Notify("STOPPING=1", "STATUS="+oneLine(status))
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }
