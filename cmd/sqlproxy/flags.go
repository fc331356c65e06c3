package main

import (
	"fmt"
	"net"
	"strconv"

	"phxgo/internal/cli"
)

// proxyFlags are the flags checked before sqlproxy starts anything: each
// bad one is a usage error (exit 2) that names it, instead of a proxy
// that retries a dial forever or an error that leaves the operator to
// guess which flag it came from.
type proxyFlags struct {
	listen, rwListen, binlogd, httpAddr string
	adminPasswordFile                   string
	procs                               int
	poll                                float64 // seconds
}

func (f proxyFlags) validate() error {
	for _, l := range []struct{ flag, addr string }{{"-listen", f.listen}, {"-rwsplit-listen", f.rwListen}, {"-http", f.httpAddr}} {
		if l.addr == "" && l.flag != "-listen" { // optional ones; empty disables
			continue
		}
		if err := hostPort(l.addr, 0); err != nil {
			return cli.Usagef("%s %q is not host:port (an empty host is every interface; for -http, loopback): %v", l.flag, l.addr, err)
		}
	}
	if err := hostPort(f.binlogd, 1); err != nil {
		return cli.Usagef("-binlogd %q is not host:port of the local binlogd's gRPC address: %v", f.binlogd, err)
	}
	if host, _, _ := net.SplitHostPort(f.binlogd); host == "" {
		return cli.Usagef("-binlogd %q has no host (e.g. 127.0.0.1%s)", f.binlogd, f.binlogd)
	}
	if f.procs < 0 {
		return cli.Usagef("-procs %d: want 0 (Go's default) or a positive GOMAXPROCS", f.procs)
	}
	if f.poll <= 0 {
		return cli.Usagef("-poll must be positive")
	}
	if f.adminPasswordFile == "" {
		return cli.Usagef("-admin-password-file is required (the password is never taken on the command line)")
	}
	return nil
}

// hostPort: a is host:port with a numeric port of at least minPort (0
// for a listener: any free port).
func hostPort(a string, minPort int) error {
	_, p, err := net.SplitHostPort(a)
	if err != nil {
		return err
	}
	if n, err := strconv.Atoi(p); err != nil || n < minPort || n > 65535 {
		return fmt.Errorf("port %q must be %d-65535", p, minPort)
	}
	return nil
}
