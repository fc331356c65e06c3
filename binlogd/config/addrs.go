package config

import (
	"fmt"
	"net"
	"strconv"
)

// Addresses: what a node advertises and what it listens on.
//
// members[] is the cluster's shared view and carries only what OTHER
// nodes use: grpc_addr (peers and operators dial it), mysql_addr (the
// other nodes' proxies read from it) and proxy_addr (the other proxies
// hop to it). Every node's file lists the same members.
//
// The top-level keys are this node's own and never leave it:
//
//	grpc_listen   binlogd gRPC server      default: members[self].grpc_addr
//	mysql_listen  MariaDB bind-address     default: members[self].mysql_addr
//	repl_addr     replication endpoint     default: 127.0.0.1:17012 (loopback only)
//
// The listen defaults bind exactly what peers dial, so a port is never
// opened on an interface nobody named (a public one, say); a host behind
// NAT or in a container, whose advertised address is not its own, sets
// grpc_listen/mysql_listen to its own address or 0.0.0.0:PORT.
//
// Files written before the split carried repl_addr in every member
// (three identical 127.0.0.1:PORT entries failed the duplicate check, a
// non-loopback one the loopback check). Load still reads them: it takes
// this node's members[].repl_addr as repl_addr, drops the others' and
// warns once (Warnings).

// DefaultReplAddr is repl_addr's default: loopback, so only the node's own
// MariaDB can pull the binlog from it.
const DefaultReplAddr = "127.0.0.1:17012"

// Warnings are what Load changed in an old-style file, for the caller to
// log once (binlogd run logs them at start).
func (c *Config) Warnings() []string { return append([]string(nil), c.warnings...) }

// migrateAddrs moves the pre-split members[].repl_addr to repl_addr.
func (c *Config) migrateAddrs() {
	legacy := false
	for i := range c.Members {
		m := &c.Members[i]
		if m.LegacyReplAddr == "" {
			continue
		}
		legacy = true
		if m.ID == c.ID && c.ReplAddr == "" {
			c.ReplAddr = m.LegacyReplAddr
		}
		m.LegacyReplAddr = ""
	}
	if legacy {
		c.warnings = append(c.warnings, fmt.Sprintf("members[].repl_addr is obsolete: only this node's MariaDB uses its replication endpoint, so it is the top-level key repl_addr (now %q); the other members' repl_addr are ignored. Move it to silence this warning (README \"binlogd config\")", c.ReplAddr))
	}
}

func (c *Config) setAddrDefaults() {
	if c.ReplAddr == "" {
		c.ReplAddr = DefaultReplAddr
	}
}

// GRPCListenAddr is where this node's gRPC server listens: grpc_listen, or
// its advertised members[].grpc_addr.
func (c *Config) GRPCListenAddr() string {
	if c.GRPCListen != "" {
		return c.GRPCListen
	}
	return c.Self().GRPCAddr
}

// GRPCSourceIP is the local address this node dials its peers from: the
// host of its gRPC listen address when that is one IP (so its traffic
// carries the member's address), nil when it listens on every interface
// or names a host by DNS name (the kernel picks).
func (c *Config) GRPCSourceIP() net.IP {
	return SourceIP(c.GRPCListenAddr())
}

// SourceIP is the source address for outgoing connections of a process
// listening on addr: its host when that is one specific IP, nil when addr
// is on every interface, names a host by DNS name or does not parse (the
// kernel picks). binlogd's peers and sqlproxy's backends both use it, so a
// node's traffic carries its member address the same way everywhere.
func SourceIP(listen string) net.IP {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || ip.IsUnspecified() {
		return nil
	}
	return ip
}

// MySQLListenAddr is MariaDB's bind address and port: mysql_listen, or
// the advertised members[].mysql_addr.
func (c *Config) MySQLListenAddr() string {
	if c.MySQLListen != "" {
		return c.MySQLListen
	}
	return c.Self().MySQLAddr
}

// MySQLBind splits MySQLListenAddr for mysqld.Options (Host, Port).
func (c *Config) MySQLBind() (host string, port int) {
	h, p, err := net.SplitHostPort(c.MySQLListenAddr())
	if err != nil {
		return "", 0
	}
	port, _ = strconv.Atoi(p)
	return h, port
}

// MySQLLocalAddr is where binlogd's own connections reach this node's
// MariaDB (capture): MySQLListenAddr with an unspecified host (0.0.0.0,
// ::, empty) read as loopback.
func (c *Config) MySQLLocalAddr() string {
	return localDialAddr(c.MySQLListenAddr())
}

// localDialAddr turns a listen address into one a local client can dial.
func localDialAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	switch ip := net.ParseIP(host); {
	case host == "":
		return net.JoinHostPort("127.0.0.1", port)
	case ip != nil && ip.IsUnspecified() && ip.To4() == nil:
		return net.JoinHostPort("::1", port)
	case ip != nil && ip.IsUnspecified():
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}

// validateAddrs checks members[] (unique cluster-wide: ids and every
// advertised address) and this node's own listeners (distinct from each
// other; a wildcard host clashes with any host on its port).
func (c *Config) validateAddrs() error {
	ids := map[uint32]bool{}
	addrs := map[string]string{}
	self := false
	for i, m := range c.Members {
		k := fmt.Sprintf("members[%d]", i)
		if m.ID == 0 || ids[m.ID] {
			return c.bad(k+".id", "must be > 0 and unique (got %d)", m.ID)
		}
		ids[m.ID] = true
		self = self || m.ID == c.ID
		for _, f := range []struct{ name, a string }{{"grpc_addr", m.GRPCAddr}, {"mysql_addr", m.MySQLAddr}, {"proxy_addr", m.ProxyAddr}} {
			if f.a == "" && (f.name == "proxy_addr" || m.Witness && f.name == "mysql_addr") {
				continue // none (a witness runs no MariaDB: witness.go)
			}
			if err := hostPort(f.a); err != nil {
				return c.bad(k+"."+f.name, "%q is not host:port (%v)", f.a, err)
			}
			if unspecified(f.a) {
				return c.bad(k+"."+f.name, "%s is not an address other nodes can dial: members[] advertises; a wildcard listen address belongs in grpc_listen/mysql_listen", f.a)
			}
			if prev, dup := addrs[f.a]; dup {
				return c.bad(k+"."+f.name, "%s is also %s", f.a, prev)
			}
			addrs[f.a] = k + "." + f.name
		}
	}
	if !self {
		return c.bad("id", "%d is not in members", c.ID)
	}
	local := []struct{ key, a string }{{"grpc_listen", c.GRPCListenAddr()}, {"mysql_listen", c.MySQLListenAddr()}, {"repl_addr", c.ReplAddr}}
	if c.Self().Witness { // no MariaDB, no replication endpoint (witness.go)
		local = local[:1]
	}
	if h := c.HTTPListenAddr(); h != "" {
		local = append(local, struct{ key, a string }{"http_addr", h})
	}
	for i, l := range local {
		if err := hostPort(l.a); err != nil {
			return c.bad(l.key, "%q is not host:port (%v)", l.a, err)
		}
		for _, o := range local[:i] {
			if clash(l.a, o.a) {
				return c.bad(l.key, "%s clashes with %s %s (one port, two listeners)", l.a, o.key, o.a)
			}
		}
	}
	if !c.AllowRemoteRepl && !c.Self().Witness && !isLoopback(c.ReplAddr) {
		return c.bad("repl_addr", "%s is not a loopback address: the replication endpoint serves the whole binlog and only this node's MariaDB needs it, so it is a per-node key, not an advertised one; use 127.0.0.1:PORT (the same on every node is fine) or, for outside replicas on other hosts (README \"Outside replicas\"), set \"allow_remote_repl\": true", c.ReplAddr)
	}
	return nil
}

// ValidateAddrs checks only members[] and this node's listen addresses
// (what Validate checks of them), for a tool that writes a config before
// the files it names exist (binlogd init).
func (c *Config) ValidateAddrs() error { return c.validateAddrs() }

func hostPort(a string) error {
	_, p, err := net.SplitHostPort(a)
	if err != nil {
		return err
	}
	if n, err := strconv.Atoi(p); err != nil || n <= 0 || n > 65535 {
		return fmt.Errorf("port %q must be 1-65535", p)
	}
	return nil
}

func unspecified(a string) bool {
	host, _, _ := net.SplitHostPort(a)
	ip := net.ParseIP(host)
	return host == "" || (ip != nil && ip.IsUnspecified())
}

// clash: two listen addresses would take the same port on some address.
func clash(a, b string) bool {
	ha, pa, _ := net.SplitHostPort(a)
	hb, pb, _ := net.SplitHostPort(b)
	return pa == pb && (ha == hb || unspecified(a) || unspecified(b))
}
