package main

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"

	"phxgo/binlogd/config"
	"phxgo/binlogd/mtls"
	"phxgo/sqlproxy"
)

// initPlan is what init writes, decided before anything is written.
type initPlan struct {
	members []config.Member
	nodes   []*nodePlan
}

// nodePlan is one node's files.
type nodePlan struct {
	spec nodeSpec
	// cfg is binlogd.json as written: tls_* and credentials_file are
	// relative, so they resolve next to the file wherever it is copied.
	cfg        *config.Config
	nodeHosts  []string   // SANs of node<id>.crt
	proxy      *proxyPlan // nil: no sqlproxy on this node
	proxyHosts []string   // SANs of proxy<id>.crt
}

// dirName is the node's directory in -out and under -install-dir; the
// systemd units' instance name (phxgo-binlogd@node1).
func (n *nodePlan) dirName() string { return fmt.Sprintf("node%d", n.cfg.ID) }

// proxyPlan is sqlproxy.env, read by scripts/systemd/phxgo-sqlproxy@.service:
// sqlproxy -listen $LISTEN -binlogd $BINLOGD -http $HTTP $EXTRA_FLAGS
// (and -admin-user phxgo_proxy -admin-password-file .../proxy-password).
type proxyPlan struct {
	listen, binlogd, http string
	extra                 []string
}

// Files init writes into each node's directory.
const (
	initConfigFile = "binlogd.json"
	initCredFile   = "credentials.json"
	initProxyPass  = "proxy-password"
	initProxyEnv   = "sqlproxy.env"
)

// planInit turns the node list into each node's settings. Advertised
// addresses go to members[]; listen addresses default to them
// (-listen-any: 0.0.0.0 on their ports); node-local endpoints (repl_addr,
// the proxy's HTTP) sit on loopback, on the node's own loopback IP when
// it advertises one (several nodes on one machine), with ports counted up
// for nodes that share a host.
func planInit(o *initOptions) (*initPlan, error) {
	voters := 0
	for _, s := range o.nodes {
		if !s.learner {
			voters++
		}
	}
	if voters%2 == 0 && !o.add { // a joining node makes any count
		return nil, usageErr{fmt.Errorf("init: %d voting nodes (witnesses included, learners not): use an odd number (an even one tolerates no more failures and splits votes)", voters)}
	}
	p := &initPlan{}
	for _, s := range o.nodes {
		p.members = append(p.members, config.Member{ID: s.id, GRPCAddr: s.grpc, MySQLAddr: s.mysql, ProxyAddr: s.proxy, Witness: s.witness, Learner: s.learner})
	}
	sharing := map[string]int{} // advertised host -> nodes seen on it
	for _, s := range o.nodes {
		host, grpcPort, _ := net.SplitHostPort(s.grpc)
		_, mysqlPort, _ := net.SplitHostPort(s.mysql)
		k := sharing[host]
		sharing[host]++
		local := "127.0.0.1"
		if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
			local = host
		}
		sub := func(t string) string { return strings.ReplaceAll(t, "{id}", strconv.Itoa(int(s.id))) }
		n := &nodePlan{spec: s, nodeHosts: []string{host}}
		c := &config.Config{
			ID: s.id, Dir: sub(o.dir), MySQLDir: sub(o.mysqlDir), Members: p.members,
			SuperviseMySQL: true, CredentialsFile: initCredFile,
			LeaseDuration: config.Duration{Duration: o.lease}, DriftMargin: config.Duration{Duration: o.lease / 10},
			ReplAddr: s.repl,
		}
		if s.witness {
			// binlogd only: no MariaDB to supervise, no credentials, no
			// replication endpoint (config/witness.go).
			c.MySQLDir, c.SuperviseMySQL, c.CredentialsFile = "", false, ""
		} else if c.ReplAddr == "" {
			c.ReplAddr = net.JoinHostPort(local, strconv.Itoa(o.replPort+k))
		}
		if o.listenAny {
			c.GRPCListen = anyAddr(host, grpcPort)
			if !s.witness {
				c.MySQLListen = anyAddr(host, mysqlPort)
			}
			// The local proxy then dials binlogd on loopback (a host behind
			// NAT may not reach its own public address).
			n.nodeHosts = append(n.nodeHosts, "127.0.0.1", "localhost")
		}
		f := mtls.DirFiles("", mtls.Identity{Role: mtls.RoleNode, ID: s.id})
		c.Security = config.Security{TLSCert: f.Cert, TLSKey: f.Key, TLSCA: f.CA}
		c.SetDefaults()
		if err := c.ValidateAddrs(); err != nil {
			return nil, usageErr{fmt.Errorf("init: node %d (%s): %w", s.id, s.from, err)}
		}
		if s.proxy != "" {
			n.proxy, n.proxyHosts = planProxy(o, n, c, local, k)
		}
		n.cfg = c
		p.nodes = append(p.nodes, n)
	}
	if err := p.checkLocalClashes(); err != nil {
		return nil, err
	}
	return p, nil
}

func planProxy(o *initOptions, n *nodePlan, c *config.Config, local string, k int) (*proxyPlan, []string) {
	host, port, _ := net.SplitHostPort(n.spec.proxy)
	pp := &proxyPlan{listen: n.spec.proxy, binlogd: n.spec.grpc,
		http: net.JoinHostPort(local, strconv.Itoa(o.proxyHTTP+k))}
	if o.listenAny {
		_, gport, _ := net.SplitHostPort(n.spec.grpc)
		pp.listen, pp.binlogd = anyAddr(host, port), net.JoinHostPort("127.0.0.1", gport)
	}
	dir := filepath.Join(o.installDir, fmt.Sprintf("node%d", c.ID))
	f := mtls.DirFiles(dir, mtls.Identity{Role: mtls.RoleProxy, ID: c.ID})
	pp.extra = []string{"-tls-cert", f.Cert, "-tls-key", f.Key, "-tls-ca", f.CA,
		"-mysql-socket", filepath.Join(c.MySQLDir, "mysqld.sock")}
	if allow := extraAllow(n.spec, c.Members); allow != "" {
		pp.extra = append(pp.extra, "-allow", allow)
	}
	return pp, []string{host}
}

// extraAllow: sqlproxy admits clients from loopback and the private
// ranges by default; the other nodes' proxies hop to this one, so member
// IPs outside those are added. "" when the default covers them all.
func extraAllow(self nodeSpec, members []config.Member) string {
	def, _ := sqlproxy.ParseAllow(sqlproxy.DefaultAllow)
	var add []string
	for _, m := range members {
		host, _, _ := net.SplitHostPort(m.ProxyAddr)
		ip := net.ParseIP(host)
		if m.ID == self.id || ip == nil || covered(def, ip) {
			continue
		}
		add = append(add, ip.String())
	}
	if len(add) == 0 {
		return ""
	}
	return sqlproxy.DefaultAllow + "," + strings.Join(add, ",")
}

func covered(nets []*net.IPNet, ip net.IP) bool {
	for _, n := range nets {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// anyAddr is every interface on port, in host's address family.
func anyAddr(host, port string) string {
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		return net.JoinHostPort("::", port)
	}
	return net.JoinHostPort("0.0.0.0", port)
}

// checkLocalClashes refuses two nodes of one host that would listen on
// the same address (repl_addr given twice with -member, say).
func (p *initPlan) checkLocalClashes() error {
	seen := map[string]string{}
	for _, n := range p.nodes {
		addrs := map[string]string{"grpc_listen": n.cfg.GRPCListenAddr()}
		if !n.spec.witness {
			addrs["repl_addr"], addrs["mysql_listen"] = n.cfg.ReplAddr, n.cfg.MySQLListenAddr()
		}
		if n.proxy != nil {
			addrs["sqlproxy -http"] = n.proxy.http
		}
		host, _, _ := net.SplitHostPort(n.spec.grpc)
		for what, a := range addrs {
			key := host + "|" + a
			if prev, dup := seen[key]; dup {
				return usageErr{fmt.Errorf("init: node %d's %s %s is also %s on host %s", n.cfg.ID, what, a, prev, host)}
			}
			seen[key] = fmt.Sprintf("node %d's %s", n.cfg.ID, what)
		}
	}
	return nil
}
