//go:build !linux

package rawnet

import (
	"net"
	"time"
)

// SetUserTimeout: TCP_USER_TIMEOUT is Linux-only (gRPC sets nothing
// elsewhere either); keepalive alone finds a silent peer there.
func SetUserTimeout(*net.TCPConn, time.Duration) error { return nil }
