//go:build !linux

package wire

import "net"

// bearStall: TCP_USER_TIMEOUT is Linux's; elsewhere nothing to lift.
func bearStall(net.Conn) (restore func()) { return func() {} }
