package preflight

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
	"time"

	"phxgo/binlogd/config"
)

// endpoint is an address this node listens on.
type endpoint struct {
	key   string // config key, e.g. members[0].grpc_addr
	addr  string // host:port to bind
	owner string // the program that listens there: binlogd, mariadbd or sqlproxy
}

// endpoints are the listeners of cfg's node: binlogd's gRPC, replication
// endpoint and HTTP, its MariaDB (binlogd/config's listen addresses), and
// its sqlproxy's client port as advertised (sqlproxy's -listen may differ).
func endpoints(cfg *config.Config) []endpoint {
	self := -1
	for i, m := range cfg.Members {
		if m.ID == cfg.ID {
			self = i
		}
	}
	if self < 0 {
		return nil
	}
	// The key to change: the listen key when set, else the advertised
	// address it defaults to.
	key := func(listen, listenKey, member string) string {
		if listen != "" {
			return listenKey
		}
		return fmt.Sprintf("members[%d].%s", self, member)
	}
	out := []endpoint{
		{key(cfg.GRPCListen, "grpc_listen", "grpc_addr"), cfg.GRPCListenAddr(), "binlogd"},
		{"repl_addr", cfg.ReplAddr, "binlogd"},
		{key(cfg.MySQLListen, "mysql_listen", "mysql_addr"), cfg.MySQLListenAddr(), "mariadbd"},
	}
	if cfg.IsWitness() { // binlogd only: no endpoint, no MariaDB (config witness.go)
		out = out[:1]
	}
	if a := cfg.HTTPListenAddr(); a != "" {
		out = append(out, endpoint{"http_addr", a, "binlogd"})
	}
	if p := cfg.Members[self].ProxyAddr; p != "" {
		out = append(out, endpoint{fmt.Sprintf("members[%d].proxy_addr", self), p, "sqlproxy"})
	}
	return out
}

// CheckPorts binds each address this node listens on and closes it at
// once. A port held by this node's own binlogd, MariaDB or sqlproxy is a
// warn (the node is running); held by anything else, a FAIL naming it.
// Nothing is dialled: host names are resolved from /etc/hosts or a
// loopback resolver only.
func CheckPorts(ctx context.Context, env *Env) []Result {
	cfg := env.Config
	if cfg == nil {
		return nil
	}
	eps := endpoints(cfg)
	if len(eps) == 0 {
		return []Result{fail("ports", fmt.Sprintf("add this node (id %d) to members in %s", cfg.ID, env.ConfigPath), "node %d is not in members: no addresses to check", cfg.ID)}
	}
	binlogd := env.runningBinlogd(cfg.Dir)
	mariadbd := env.runningMariadbd(cfg.MySQLDir)
	var out []Result
	for _, ep := range eps {
		out = append(out, env.checkPort(ctx, ep, binlogd, mariadbd))
	}
	return out
}

func (e *Env) checkPort(ctx context.Context, ep endpoint, binlogd, mariadbd proc) Result {
	name := "port " + ep.key
	moveFix := fmt.Sprintf("set %s in %s to a free port", ep.key, e.ConfigPath)
	host, portS, err := net.SplitHostPort(ep.addr)
	port, perr := strconv.Atoi(portS)
	if err != nil || perr != nil {
		return fail(name, moveFix, "%q is not host:port", ep.addr)
	}
	ip, err := resolveLocal(ctx, host)
	if err != nil {
		return fail(name, fmt.Sprintf("use an IP address in %s in %s, or add %s to /etc/hosts", ep.key, e.ConfigPath, host), "%s: %v", ep.addr, err)
	}
	bind := net.JoinHostPort(ip, portS)
	l, err := net.Listen("tcp", bind)
	if err == nil {
		l.Close()
		return ok(name, "%s is free", ep.addr)
	}
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return e.portInUse(name, ep, port, moveFix, binlogd, mariadbd)
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		sev := Fail
		if ep.owner == "sqlproxy" { // sqlproxy may listen elsewhere (-listen) than the address others dial
			sev = Warn
		}
		return Result{Check: name, Status: sev, Finding: fmt.Sprintf("%s is not an address of this host", ep.addr),
			Fix: fmt.Sprintf("set %s in %s to an address of this host (`ip -br addr` lists them)", ep.key, e.ConfigPath)}
	case errors.Is(err, syscall.EACCES):
		return fail(name, fmt.Sprintf("set %s in %s to a port >= 1024, or let binlogd bind low ports: sudo setcap cap_net_bind_service=+ep $(command -v binlogd)", ep.key, e.ConfigPath),
			"%s: %s may not bind a port below 1024", ep.addr, e.Runner.Name)
	default:
		return fail(name, moveFix, "cannot bind %s: %v", ep.addr, err)
	}
}

func (e *Env) portInUse(name string, ep endpoint, port int, moveFix string, binlogd, mariadbd proc) Result {
	holder := e.listenerOf(port)
	switch {
	case ep.owner == "binlogd" && binlogd.pid != 0 && (holder.pid == 0 || holder.pid == binlogd.pid):
		return warn(name, fmt.Sprintf("none if this node should be running; to check a fresh start stop it first: kill -TERM %d", binlogd.pid),
			"%s is in use by this node's binlogd (pid %d), which is running", ep.addr, binlogd.pid)
	case ep.owner == "mariadbd" && mariadbd.pid != 0 && (holder.pid == 0 || holder.pid == mariadbd.pid):
		return warn(name, fmt.Sprintf("none if this node should be running; to check a fresh start: binlogd stop-mysql -config %s", e.ConfigPath),
			"%s is in use by this node's MariaDB (pid %d), which is running", ep.addr, mariadbd.pid)
	case ep.owner == "sqlproxy" && holder.comm == "sqlproxy":
		return warn(name, fmt.Sprintf("none if this node's sqlproxy should be running; else stop it: kill -TERM %d", holder.pid),
			"%s is in use by a sqlproxy (%s), presumably this node's", ep.addr, holder)
	case holder.pid != 0:
		return fail(name, fmt.Sprintf("stop what holds it (kill %d) or %s", holder.pid, moveFix),
			"%s is in use by %s", ep.addr, holder)
	default:
		return fail(name, fmt.Sprintf("find what holds it (sudo ss -ltnp 'sport = :%d') and stop it, or %s", port, moveFix),
			"%s is in use by a process this user cannot see", ep.addr)
	}
}

// resolveLocal turns host into an IP to bind. Names come from /etc/hosts
// or, failing that, from a resolver on loopback (systemd-resolved); the
// check sends nothing off the host.
func resolveLocal(ctx context.Context, host string) (string, error) {
	if host == "" || net.ParseIP(host) != nil {
		return host, nil
	}
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		h, _, err := net.SplitHostPort(addr)
		if ip := net.ParseIP(h); err != nil || ip == nil || !ip.IsLoopback() {
			return nil, fmt.Errorf("not asking resolver %s: the check sends nothing off this host", addr)
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ips, err := r.LookupIPAddr(ctx, host)
	if err != nil {
		return "", fmt.Errorf("cannot resolve %s locally: %w", host, err)
	}
	for _, ip := range ips { // net.Listen prefers IPv4 too
		if ip.IP.To4() != nil {
			return ip.IP.String(), nil
		}
	}
	return ips[0].IP.String(), nil
}
