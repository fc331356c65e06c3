package rawnet

import "net"

// Listener wraps each connection it accepts with Wrap.
type Listener struct{ net.Listener }

// Accept is the listener's Accept, the connection wrapped.
func (l Listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return Wrap(c), nil
}
