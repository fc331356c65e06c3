package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"phxgo/binlogd/config"
	pb "phxgo/proto"
)

// memberFlags collects repeated -member ID=GRPC,MYSQL,REPL[,PROXY].
type memberFlags []config.Member

func (m *memberFlags) String() string { return fmt.Sprint(len(*m), " members") }

func (m *memberFlags) Set(s string) error {
	id, rest, ok := strings.Cut(s, "=")
	addrs := strings.Split(rest, ",")
	n, err := strconv.ParseUint(id, 10, 32)
	if !ok || err != nil || n == 0 || len(addrs) < 3 || len(addrs) > 4 {
		return fmt.Errorf("-member %q: want ID=GRPC,MYSQL,REPL[,PROXY] (host:port each)", s)
	}
	e := config.Member{ID: uint32(n), GRPCAddr: addrs[0], MySQLAddr: addrs[1], ReplAddr: addrs[2]}
	if len(addrs) == 4 {
		e.ProxyAddr = addrs[3]
	}
	*m = append(*m, e)
	return nil
}

// cmdInit writes the config files of a new cluster, one per node, after
// checking that no node already belongs to a cluster.
func cmdInit(args []string) error {
	fs := flag.NewFlagSet("init", flag.ContinueOnError)
	var ms memberFlags
	fs.Var(&ms, "member", "a node: ID=GRPC,MYSQL,REPL[,PROXY] (repeat per node)")
	hosts := fs.String("hosts", "", "shorthand: comma-separated hosts, node i+1 on the i-th, default ports")
	grpcPort := fs.Int("grpc-port", 17011, "with -hosts: binlogd gRPC port")
	mysqlPort := fs.Int("mysql-port", 3306, "with -hosts: MariaDB port")
	replPort := fs.Int("repl-port", 17012, "with -hosts: binlogd replication port")
	proxyPort := fs.Int("proxy-port", 3307, "with -hosts: sqlproxy port (0: none)")
	out := fs.String("out", ".", "write node{id}.json here")
	dir := fs.String("dir", "/var/lib/phxgo/binlogd", "each node's binlogd state dir ({id} is replaced)")
	mysqlDir := fs.String("mysql-dir", "/var/lib/phxgo/mysql", "each node's MariaDB instance dir ({id} is replaced)")
	cred := fs.String("credentials", "/etc/phxgo/credentials.json", "credentials file path (on every node)")
	lease := fs.Duration("lease", 5*time.Second, "master lease duration")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *hosts != "" {
		for i, h := range strings.Split(*hosts, ",") {
			e := config.Member{ID: uint32(i + 1), GRPCAddr: net.JoinHostPort(h, strconv.Itoa(*grpcPort)),
				MySQLAddr: net.JoinHostPort(h, strconv.Itoa(*mysqlPort)), ReplAddr: net.JoinHostPort(h, strconv.Itoa(*replPort))}
			if *proxyPort != 0 {
				e.ProxyAddr = net.JoinHostPort(h, strconv.Itoa(*proxyPort))
			}
			ms = append(ms, e)
		}
	}
	if len(ms) == 0 {
		return errors.New("init: give the nodes with -member (repeated) or -hosts")
	}
	var cfgs []*config.Config
	for _, m := range ms {
		sub := func(t string) string { return strings.ReplaceAll(t, "{id}", strconv.Itoa(int(m.ID))) }
		c := &config.Config{ID: m.ID, Dir: sub(*dir), MySQLDir: sub(*mysqlDir), Members: ms,
			SuperviseMySQL: true, CredentialsFile: *cred,
			LeaseDuration: config.Duration{Duration: *lease}, DriftMargin: config.Duration{Duration: *lease / 10}}
		c.SetDefaults()
		if err := c.Validate(); err != nil {
			return fmt.Errorf("init: node %d: %w", m.ID, err)
		}
		cfgs = append(cfgs, c)
	}
	if err := checkFresh(cfgs, *out); err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	for _, c := range cfgs {
		p := filepath.Join(*out, fmt.Sprintf("node%d.json", c.ID))
		if err := c.Save(p); err != nil {
			return fmt.Errorf("init: write %s: %w", p, err)
		}
		fmt.Printf("wrote %s (node %d: grpc %s, mysql %s)\n", p, c.ID, c.Self().GRPCAddr, c.Self().MySQLAddr)
	}
	fmt.Printf("new cluster of %d nodes: copy node{id}.json to each node and start binlogd run -config there\n", len(cfgs))
	return nil
}

// checkFresh refuses when a config file exists already, a node's state
// dir (on this host) holds a Paxos log, or a binlogd answers at a node's
// address: that node belongs to a cluster already.
func checkFresh(cfgs []*config.Config, out string) error {
	for _, c := range cfgs {
		p := filepath.Join(out, fmt.Sprintf("node%d.json", c.ID))
		if _, err := os.Stat(p); err == nil {
			return fmt.Errorf("init: %s exists already; refusing to overwrite a cluster's config (remove it to start over)", p)
		}
		for _, f := range []string{filepath.Join(c.Dir, "paxos", "paxos-membership"), filepath.Join(c.Dir, "paxos", "MANIFEST")} {
			if _, err := os.Stat(f); err == nil {
				return fmt.Errorf("init: node %d: %s exists: its dir %s already holds a cluster's Paxos log; a node joins a running cluster with 'binlogd members add', or use an empty dir", c.ID, f, c.Dir)
			}
		}
		creds, err := dialOptionFor(c.TLSFiles())
		if err != nil {
			return err
		}
		cl, closeFn, err := dial(c.Self().GRPCAddr, creds)
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		st, err := cl.Status(ctx, &pb.StatusRequest{})
		cancel()
		closeFn()
		if err == nil {
			var ids []uint32
			for _, m := range st.Members {
				ids = append(ids, m.Id)
			}
			return fmt.Errorf("init: node %d: a binlogd already answers at %s (node %d of a cluster with members %v); refusing to create a new cluster over it", c.ID, c.Self().GRPCAddr, st.NodeId, ids)
		}
	}
	return nil
}
