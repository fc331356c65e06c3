package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"phxgo/internal/cli"
)

// binlogd init: everything a new cluster's nodes need, one directory per
// node, written without sending a single packet (-probe opts in to asking
// the nodes' addresses whether a binlogd already answers there).
//
//	initcmd.go    flags and the node list (-node, -member, -hosts)
//	initplan.go   each node's binlogd.json and sqlproxy settings
//	initwrite.go  the output directory: CA, certificates, credentials, files
//	initprobe.go  -probe

const initUsage = `usage: binlogd init [flags] (-hosts H1,H2,H3 | -node ID=GRPC,MYSQL[,PROXY] ...) [-witness ID=GRPC ...] [-learner ID=GRPC,MYSQL[,PROXY] ...]

Writes a new cluster's files into -out, one directory per node, plus the
CA and the operator's certificate. Dials nothing unless -probe is given.

  OUT/node<id>/   binlogd.json, credentials.json, proxy-password, sqlproxy.env,
                  ca.crt, node<id>.crt/.key, proxy<id>.crt/.key
                  -> copy to the node's host as INSTALL_DIR/node<id>/
  OUT/admin.crt, admin.key   the operator's certificate (binlogd status ... -tls-*)
  OUT/ca.key      the CA's key: keep it offline, it only issues certificates

Nodes are given by the addresses the OTHER nodes dial (members[] in
binlogd.json): binlogd gRPC, MariaDB, and sqlproxy. A witness (-witness,
README "Witnesses") runs binlogd only: its directory has binlogd.json,
ca.crt and node<id>.crt/.key, no credentials. A learner (-learner) is a
data node that follows the log and serves reads but never votes and is
never master ("learner": true in members[]); only voters count toward
the odd number of nodes. Each node listens on
those same addresses unless -listen-any; its replication endpoint is its
own and stays on loopback (repl_addr, 127.0.0.1:REPL_PORT).

Examples:
  binlogd init -out ./phxgo-init -hosts 10.0.0.1,10.0.0.2,10.0.0.3
  binlogd init -out ./phxgo-init -hosts 10.0.0.1,10.0.0.2 -witness 3=10.0.0.3:17011
  binlogd init -out ./phxgo-init -add -node 4=10.0.0.4:17011,10.0.0.4:3306,10.0.0.4:3307
  binlogd init -out ./phxgo-init \
    -node 1=db1.example:17011,db1.example:3306,db1.example:3307 \
    -node 2=db2.example:17011,db2.example:3306,db2.example:3307 \
    -node 3=db3.example:17011,db3.example:3306,db3.example:3307

Flags:
`

// initOptions are init's flags, parsed.
type initOptions struct {
	nodes        []nodeSpec
	out          string
	installDir   string
	dir          string
	mysqlDir     string
	credentials  string
	lease        time.Duration
	replPort     int
	proxyHTTP    int
	listenAny    bool
	probe        bool
	caValidity   time.Duration
	certValidity time.Duration
	add          bool   // -add: one more node for the cluster in -out (initadd.go)
	seedConfig   string // -add: a member's live config, for base_gtid
}

// initDataRoot is where -dir and -mysql-dir point by default: the
// directory the systemd units may write (ReadWritePaths). Tests point it
// at a temp dir, so that they never read a real host's /var/lib/phxgo.
var initDataRoot = "/var/lib/phxgo"

// nodeSpec is one node as given on the command line: its advertised
// addresses and, from the older -member form, its own repl address.
type nodeSpec struct {
	id                       uint32
	grpc, mysql, proxy, repl string
	from                     string // the flag it came from, for errors
	witness                  bool   // binlogd only: grpc, no MariaDB or sqlproxy
	learner                  bool   // a data node that never votes
}

// nodeFlags collects repeated -node ID=GRPC,MYSQL[,PROXY].
type nodeFlags struct{ specs *[]nodeSpec }

func (f nodeFlags) String() string { return "" }

func (f nodeFlags) Set(s string) error {
	id, addrs, err := splitNodeFlag(s)
	if err != nil || len(addrs) < 2 || len(addrs) > 3 {
		return fmt.Errorf("want ID=GRPC,MYSQL[,PROXY] (host:port each, as the other nodes dial them), got %q", s)
	}
	n := nodeSpec{id: id, grpc: addrs[0], mysql: addrs[1], from: "-node " + s}
	if len(addrs) == 3 {
		n.proxy = addrs[2]
	}
	*f.specs = append(*f.specs, n)
	return nil
}

// witnessFlags collects repeated -witness ID=GRPC: a voter that runs
// binlogd only (no MariaDB, no sqlproxy; README "Witnesses").
type witnessFlags struct{ specs *[]nodeSpec }

func (f witnessFlags) String() string { return "" }

func (f witnessFlags) Set(s string) error {
	id, addrs, err := splitNodeFlag(s)
	if err != nil || len(addrs) != 1 || addrs[0] == "" {
		return fmt.Errorf("want ID=GRPC (host:port, as the other nodes dial it; a witness has no MariaDB or sqlproxy), got %q", s)
	}
	*f.specs = append(*f.specs, nodeSpec{id: id, grpc: addrs[0], from: "-witness " + s, witness: true})
	return nil
}

// learnerFlags collects repeated -learner ID=GRPC,MYSQL[,PROXY]: a data
// node that starts as a learner (members[].learner).
type learnerFlags struct{ specs *[]nodeSpec }

func (f learnerFlags) String() string { return "" }

func (f learnerFlags) Set(s string) error {
	var n []nodeSpec
	if err := (nodeFlags{&n}).Set(s); err != nil {
		return err
	}
	n[0].learner, n[0].from = true, "-learner "+s
	*f.specs = append(*f.specs, n[0])
	return nil
}

// memberFlags collects the older -member ID=GRPC,MYSQL,REPL[,PROXY]:
// REPL is that node's own repl_addr (loopback), not an advertised one.
type memberFlags struct{ specs *[]nodeSpec }

func (f memberFlags) String() string { return "" }

func (f memberFlags) Set(s string) error {
	id, addrs, err := splitNodeFlag(s)
	if err != nil || len(addrs) < 3 || len(addrs) > 4 {
		return fmt.Errorf("want ID=GRPC,MYSQL,REPL[,PROXY] (host:port each), got %q", s)
	}
	n := nodeSpec{id: id, grpc: addrs[0], mysql: addrs[1], repl: addrs[2], from: "-member " + s}
	if len(addrs) == 4 {
		n.proxy = addrs[3]
	}
	*f.specs = append(*f.specs, n)
	return nil
}

func splitNodeFlag(s string) (uint32, []string, error) {
	idS, rest, ok := strings.Cut(s, "=")
	n, err := strconv.ParseUint(idS, 10, 32)
	if !ok || err != nil || n == 0 {
		return 0, nil, errors.New("bad id")
	}
	addrs := strings.Split(rest, ",")
	for _, a := range addrs {
		if _, _, err := net.SplitHostPort(a); err != nil && a != "" {
			return 0, nil, err
		}
	}
	return uint32(n), addrs, nil
}

// parseInit parses init's flags; errors are usage errors.
func parseInit(args []string, stderr io.Writer) (*initOptions, error) {
	o := &initOptions{}
	fs := flag.NewFlagSet("init", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), initUsage)
		fs.PrintDefaults()
	}
	fs.Var(nodeFlags{&o.nodes}, "node", "a node: ID=GRPC,MYSQL[,PROXY], the addresses the other nodes dial (repeat per node)")
	fs.Var(memberFlags{&o.nodes}, "member", "older form of -node: ID=GRPC,MYSQL,REPL[,PROXY], REPL being that node's own (loopback) repl_addr")
	var witnesses []nodeSpec // and learners
	fs.Var(witnessFlags{&witnesses}, "witness", "a witness: ID=GRPC, binlogd only (votes on the log, no MariaDB or sqlproxy, never master); with -hosts or -node (repeat per witness)")
	fs.Var(learnerFlags{&witnesses}, "learner", "a learner: ID=GRPC,MYSQL[,PROXY] as -node, but it never votes and is never master (it follows the log and serves reads; binlogd members promote makes it a voter)")
	hosts := fs.String("hosts", "", "shorthand: comma-separated hosts (IPs or DNS names), node i+1 on the i-th, default ports")
	grpcPort := fs.Int("grpc-port", 17011, "with -hosts: binlogd gRPC port")
	mysqlPort := fs.Int("mysql-port", 3306, "with -hosts: MariaDB port")
	proxyPort := fs.Int("proxy-port", 3307, "with -hosts: sqlproxy port (0: no sqlproxy)")
	fs.IntVar(&o.replPort, "repl-port", 17012, "each node's replication endpoint, on loopback (nodes sharing a host get the next ports)")
	fs.IntVar(&o.proxyHTTP, "proxy-http-port", 9307, "each sqlproxy's metrics HTTP port, on loopback (nodes sharing a host get the next ports)")
	fs.BoolVar(&o.listenAny, "listen-any", false, "nodes listen on every interface (0.0.0.0:PORT) and advertise the given addresses: for hosts behind NAT or in containers")
	fs.StringVar(&o.out, "out", "phxgo-init", "write here (must not exist or be empty)")
	fs.StringVar(&o.installDir, "install-dir", "/etc/phxgo", "where each node's directory will live on its host (INSTALL_DIR/node<id>; sqlproxy.env names files there)")
	fs.StringVar(&o.dir, "dir", filepath.Join(initDataRoot, "node{id}", "binlogd"), "each node's binlogd state dir ({id} is replaced)")
	fs.StringVar(&o.mysqlDir, "mysql-dir", filepath.Join(initDataRoot, "node{id}", "mysql"), "each node's MariaDB instance dir ({id} is replaced)")
	fs.StringVar(&o.seedConfig, "seed-config", "", "with -add: a running member's binlogd.json (e.g. the seed's, copied from its host) to take base_gtid from, when -out's configs predate a restore -new-cluster")
	fs.StringVar(&o.credentials, "credentials", "", "copy this credentials file (mode 0600) to every node instead of generating random passwords")
	fs.DurationVar(&o.lease, "lease", 5*time.Second, "master lease duration")
	fs.DurationVar(&o.caValidity, "ca-validity", 10*365*24*time.Hour, "validity of the new CA")
	fs.DurationVar(&o.certValidity, "cert-validity", 3*365*24*time.Hour, "validity of the node, proxy and admin certificates")
	fs.BoolVar(&o.add, "add", false, "add ONE node (-node ID=...) to the cluster init wrote in -out: certificates from its CA, \"join\": true, members from its node configs; writes -out/node<id>/ only")
	fs.BoolVar(&o.probe, "probe", false, "before writing, dial each node's grpc address and refuse if something answers there (sends traffic to every node address)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, usageErr{fmt.Errorf("init: unexpected arguments %q", fs.Args())}
	}
	if *hosts != "" {
		if len(o.nodes) > 0 {
			return nil, usageErr{errors.New("init: give -hosts or -node/-member, not both")}
		}
		for i, h := range strings.Split(*hosts, ",") {
			h = strings.Trim(strings.TrimSpace(h), "[]")
			if h == "" {
				return nil, usageErr{fmt.Errorf("init: -hosts %q: empty host at position %d", *hosts, i+1)}
			}
			n := nodeSpec{id: uint32(i + 1), grpc: net.JoinHostPort(h, strconv.Itoa(*grpcPort)),
				mysql: net.JoinHostPort(h, strconv.Itoa(*mysqlPort)), from: "-hosts " + h}
			if *proxyPort != 0 {
				n.proxy = net.JoinHostPort(h, strconv.Itoa(*proxyPort))
			}
			o.nodes = append(o.nodes, n)
		}
	}
	o.nodes = append(o.nodes, witnesses...) // witnesses and learners after the voting data nodes, as their ids usually are
	if len(o.nodes) == 0 && !(o.add && len(witnesses) > 0) {
		return nil, usageErr{errors.New("init: give the nodes with -hosts H1,H2,H3 or -node ID=GRPC,MYSQL[,PROXY] (repeated); -h for help")}
	}
	for _, p := range []string{o.installDir, o.dir, o.mysqlDir} {
		if strings.ContainsAny(p, " \t\n\"'$\\") {
			return nil, usageErr{fmt.Errorf("init: path %q: no spaces, quotes, $ or \\ (sqlproxy.env is read by systemd)", p)}
		}
	}
	return o, nil
}

// usageErr is a bad command line (exit status 2, as flag parse errors).
type usageErr struct{ error }

func (u usageErr) Unwrap() error { return u.error }

// cmdInit is `binlogd init`. Exit status: 0 written (or -h), 2 a bad
// command line (nothing written), 1 anything else (errors on stderr).
func cmdInit(args []string) error {
	o, err := parseInit(args, os.Stderr)
	if err == nil {
		err = runInit(o, os.Stdout)
	}
	var ue usageErr
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return err
	case errors.As(err, &ue):
		return &cli.UsageError{Err: err}
	case o == nil: // the flag package printed the error and the usage
		return &cli.UsageError{Err: err, Printed: true}
	}
	return err
}

// runInit plans, optionally probes, writes and checks.
func runInit(o *initOptions, stdout io.Writer) error {
	if o.add {
		return runInitAdd(o, stdout)
	}
	plan, err := planInit(o)
	if err != nil {
		return err
	}
	if err := checkFresh(plan, o); err != nil {
		return err
	}
	if o.probe {
		if err := probeNodes(plan); err != nil {
			return err
		}
	}
	if err := writeInit(plan, o); err != nil {
		return err
	}
	printNextSteps(stdout, plan, o)
	return nil
}
