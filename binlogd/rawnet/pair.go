package rawnet

import (
	"net"
	"path/filepath"
)

// Pair returns both ends of a real connection on network, "tcp" (on
// 127.0.0.1) or "unix" (a socket file in dir), plain net.Conns for tests
// of code that takes the raw path only for sockets. The caller closes
// both.
func Pair(network, dir string) (client, server net.Conn, err error) {
	addr := "127.0.0.1:0"
	if network == "unix" {
		addr = filepath.Join(dir, "s")
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		return nil, nil, err
	}
	defer ln.Close()
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() { c, err := ln.Accept(); ch <- res{c, err} }()
	client, err = net.Dial(network, ln.Addr().String())
	if err != nil {
		return nil, nil, err
	}
	r := <-ch
	if r.err != nil {
		client.Close()
		return nil, nil, r.err
	}
	return client, r.c, nil
}
