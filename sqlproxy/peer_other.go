//go:build !linux

package sqlproxy

import (
	"net"
	"time"
)

// setUserTimeout: TCP_USER_TIMEOUT is Linux-only; keepalive alone bounds
// a silent peer elsewhere.
func setUserTimeout(*net.TCPConn, time.Duration) error { return nil }
