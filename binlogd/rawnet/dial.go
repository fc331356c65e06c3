package rawnet

import (
	"context"
	"net"
)

// DialContext dials network/addr (as net.Dialer does) and wraps the
// socket (Wrap). Its signature is go-sql-driver's Config.DialFunc, so a
// connection pool to a MariaDB server makes no Syscall per query.
//
// go-sql-driver checks a pooled connection's liveness only on a socket
// that is a syscall.Conn, with a Syscall read; a Conn is not one, so the
// check is skipped. A query on a connection the server closed then fails
// on its write over a unix socket (EPIPE: database/sql retries on a new
// connection), or with an invalid-connection error over TCP, as it would
// after the check had passed a moment before the close.
func DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return Wrap(c), nil
}
