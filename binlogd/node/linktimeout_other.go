//go:build !linux

package node

import (
	"net"
	"time"
)

// setUserTimeout: TCP_USER_TIMEOUT is Linux-only (gRPC sets nothing
// elsewhere either); keepalive alone finds a dead peer there.
func setUserTimeout(*net.TCPConn, time.Duration) error { return nil }
