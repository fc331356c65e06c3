package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"

	"phxgo/binlogd/config"
	"phxgo/binlogd/mtls"
)

// binlogd init -add -node ID=GRPC,MYSQL[,PROXY] -out OUT: one more node
// for the cluster whose files init wrote to OUT. Its certificates come
// from OUT's CA (ca.key must be back in OUT for the command), its
// credentials are OUT/credentials.json, its members are every member named
// in OUT's node configs plus itself, with "join": true (it learns the live
// membership from them and votes in nothing until `binlogd members add`),
// its lease settings and base_gtid (a cluster rebuilt from a backup) are
// the cluster's: base_gtid from -seed-config (a member's live config) or
// -out's configs. Ports and paths follow the
// same flags as a new cluster's. It writes OUT/node<id>/ only.

// runInitAdd writes OUT/node<id>/ for the one node in o.nodes.
func runInitAdd(o *initOptions, stdout io.Writer) error {
	if len(o.nodes) != 1 {
		return usageErr{fmt.Errorf("init -add: give exactly one -node ID=GRPC,MYSQL[,PROXY], -learner ID=... or -witness ID=GRPC (got %d)", len(o.nodes))}
	}
	add := o.nodes[0]
	for _, f := range []string{mtls.CAKeyFile, mtls.CACertFile, initCredFile} {
		if _, err := os.Stat(filepath.Join(o.out, f)); err != nil {
			return fmt.Errorf("init -add: %s: %w (-out must be the directory binlogd init wrote; put ca.key back there for this command)", filepath.Join(o.out, f), err)
		}
	}
	existing, err := initExistingConfigs(o.out)
	if err != nil {
		return err
	}
	byID := map[uint32]config.Member{}
	for _, c := range existing {
		for _, m := range c.Members {
			byID[m.ID] = m
		}
	}
	if _, dup := byID[add.id]; dup {
		return usageErr{fmt.Errorf("init -add: node %d is already a member in %s's configs: pick a new id", add.id, o.out)}
	}
	ids := make([]int, 0, len(byID))
	for id := range byID {
		ids = append(ids, int(id))
	}
	sort.Ints(ids)
	// Plan the whole set as init would, so the new node's node-local ports
	// count past the members that share its host; keep only its plan.
	all := *o
	all.nodes = nil
	for _, id := range ids {
		m := byID[uint32(id)]
		all.nodes = append(all.nodes, nodeSpec{id: m.ID, grpc: m.GRPCAddr, mysql: m.MySQLAddr, proxy: m.ProxyAddr, witness: m.Witness, learner: m.Learner, from: "member " + fmt.Sprint(m.ID)})
	}
	all.nodes = append(all.nodes, add)
	all.lease = existing[0].LeaseDuration.Duration
	p, err := planInit(&all)
	if err != nil {
		return err
	}
	n := p.nodes[len(p.nodes)-1]
	n.cfg.Join = true
	n.cfg.DriftMargin = existing[0].DriftMargin
	base, baseFrom, err := clusterBaseGTID(existing, o.seedConfig)
	if err != nil {
		return err
	}
	n.cfg.BaseGTID = base
	if err := checkFresh(&initPlan{nodes: []*nodePlan{n}}, &initOptions{out: filepath.Join(o.out, n.dirName())}); err != nil {
		return err
	}
	cred, err := config.LoadCredentials(filepath.Join(o.out, initCredFile))
	if err != nil {
		return fmt.Errorf("init -add: %w", err)
	}
	caPEM, err := os.ReadFile(filepath.Join(o.out, mtls.CACertFile))
	if err != nil {
		return fmt.Errorf("init -add: %w", err)
	}
	if err := writeNode(n, o, cred, caPEM); err != nil {
		return err
	}
	path := filepath.Join(o.out, n.dirName(), initConfigFile)
	if _, err := config.Load(path); err != nil {
		return fmt.Errorf("init -add: node %d: the written config does not load: %w", n.cfg.ID, err)
	}
	printAddSteps(stdout, n, o)
	if base != "" {
		fmt.Fprintf(stdout, "base_gtid %q (the cluster was rebuilt from a backup) copied from %s\n", base, baseFrom)
	}
	return nil
}

// clusterBaseGTID is the cluster's base_gtid (a cluster rebuilt from a
// backup: binlogd restore -new-cluster), which every member must share: the
// one -seed-config names, else the one in -out's node configs. Configs
// that disagree are refused, naming both.
func clusterBaseGTID(existing []*config.Config, seedConfig string) (base, from string, err error) {
	note := func(v, src string) error {
		if v == "" {
			return nil
		}
		if base != "" && v != base {
			return fmt.Errorf("init -add: base_gtid %q in %s but %q in %s: every member must have the same one (fix the configs first)", base, from, v, src)
		}
		base, from = v, src
		return nil
	}
	if seedConfig != "" {
		c, err := config.Load(seedConfig)
		if err != nil {
			return "", "", fmt.Errorf("init -add: -seed-config: %w", err)
		}
		if err := note(c.BaseGTID, seedConfig); err != nil {
			return "", "", err
		}
	}
	for _, c := range existing {
		if err := note(c.BaseGTID, fmt.Sprintf("node %d's config in -out", c.ID)); err != nil {
			return "", "", err
		}
	}
	return base, from, nil
}

// initExistingConfigs loads OUT/node*/binlogd.json, lowest id first.
func initExistingConfigs(out string) ([]*config.Config, error) {
	paths, err := filepath.Glob(filepath.Join(out, "node*", initConfigFile))
	if err != nil {
		return nil, err
	}
	var cfgs []*config.Config
	for _, p := range paths {
		c, err := config.Load(p)
		if err != nil {
			return nil, fmt.Errorf("init -add: %w", err)
		}
		cfgs = append(cfgs, c)
	}
	if len(cfgs) == 0 {
		return nil, errors.New("init -add: no node<id>/binlogd.json in -out: give the directory binlogd init wrote")
	}
	sort.Slice(cfgs, func(i, j int) bool { return cfgs[i].ID < cfgs[j].ID })
	return cfgs, nil
}

func printAddSteps(w io.Writer, n *nodePlan, o *initOptions) {
	dir := filepath.Join(o.out, n.dirName())
	self := n.cfg.Self()
	host, _, _ := net.SplitHostPort(self.GRPCAddr)
	if self.Witness { // binlogd only: nothing to seed, no sqlproxy
		fmt.Fprintf(w, `wrote witness node %d (join) to %s: grpc %s
next steps:
  1. copy %s to %s as %s/%s/ (scp -rp; chown -R mysql:mysql), install binlogd and its unit
  2. systemctl start phxgo-binlogd@%s
  3. binlogd members add -addr ANY_MEMBER_GRPC -config %s -tls-dir %s
`, n.cfg.ID, dir, self.GRPCAddr, dir, host, o.installDir, n.dirName(), n.dirName(), filepath.Join(dir, initConfigFile), o.out)
		return
	}
	fmt.Fprintf(w, `wrote node %d (join) to %s: grpc %s, mysql %s, proxy %s; repl_addr %s
next steps:
  1. copy %s to %s as %s/%s/ (scp -rp; chown -R mysql:mysql), install the binaries and units
  2. seed its MariaDB from a replica (README "Adding a node"; scripts/seed-node.sh with NO_START=1)
  3. systemctl start phxgo-binlogd@%s phxgo-sqlproxy@%s
  4. binlogd members add -addr ANY_MEMBER_GRPC -config %s -tls-dir %s   (-config carries "learner": true)
`, n.cfg.ID, dir, self.GRPCAddr, self.MySQLAddr, orNone(self.ProxyAddr), n.cfg.ReplAddr,
		dir, host, o.installDir, n.dirName(), n.dirName(), n.dirName(), filepath.Join(dir, initConfigFile), o.out)
}
