package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"phxgo/binlogd/config"
	"phxgo/binlogd/mtls"
)

// checkFresh refuses, from local files only, when -out holds anything
// (a previous run's CA or configs) or a node's state dir on this host
// already holds a Paxos log. (-probe asks the network.)
func checkFresh(p *initPlan, o *initOptions) error {
	if ents, err := os.ReadDir(o.out); err == nil && len(ents) > 0 {
		return fmt.Errorf("init: %s is not empty (it holds %s); refusing to overwrite a cluster's CA and configs: pick a new -out", o.out, ents[0].Name())
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("init: -out: %w", err)
	}
	for _, n := range p.nodes {
		for _, f := range []string{filepath.Join(n.cfg.Dir, "paxos", "paxos-membership"), filepath.Join(n.cfg.Dir, "paxos", "MANIFEST")} {
			if _, err := os.Stat(f); err == nil {
				return fmt.Errorf("init: node %d: %s exists: its dir %s already holds a cluster's Paxos log; a node joins a running cluster with 'binlogd members add', or use an empty dir", n.cfg.ID, f, n.cfg.Dir)
			}
		}
	}
	return nil
}

// writeInit writes -out: the CA and admin certificate at the top, one
// directory per node. Certificates are issued at the top (WriteCert needs
// the CA key beside it) and moved into their node's directory, so each
// private key exists in one place. Every binlogd.json is then loaded as
// binlogd run would load it.
func writeInit(p *initPlan, o *initOptions) error {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	cred, err := initCredentials(o.credentials)
	if err != nil {
		return err
	}
	if err := config.SaveCredentials(filepath.Join(o.out, initCredFile), cred); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	if err := mtls.WriteCA(o.out, o.caValidity); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	if _, _, err := mtls.WriteCert(o.out, mtls.Identity{Role: mtls.RoleAdmin}, nil, o.certValidity); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	caPEM, err := os.ReadFile(filepath.Join(o.out, mtls.CACertFile))
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	for _, n := range p.nodes {
		if err := writeNode(n, o, cred, caPEM); err != nil {
			return err
		}
	}
	for _, n := range p.nodes {
		path := filepath.Join(o.out, n.dirName(), initConfigFile)
		if _, err := config.Load(path); err != nil {
			return fmt.Errorf("init: node %d: the written config does not load: %w", n.cfg.ID, err)
		}
	}
	return nil
}

func writeNode(n *nodePlan, o *initOptions, cred config.Credentials, caPEM []byte) error {
	dir := filepath.Join(o.out, n.dirName())
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	issue := func(role mtls.Role, hosts []string) error {
		id := mtls.Identity{Role: role, ID: n.cfg.ID}
		cert, key, err := mtls.WriteCert(o.out, id, hosts, o.certValidity)
		if err != nil {
			return fmt.Errorf("init: node %d: %w", n.cfg.ID, err)
		}
		for _, f := range []string{cert, key} {
			if err := os.Rename(f, filepath.Join(dir, filepath.Base(f))); err != nil {
				return fmt.Errorf("init: %w", err)
			}
		}
		return nil
	}
	if err := issue(mtls.RoleNode, n.nodeHosts); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, mtls.CACertFile), caPEM, 0o644); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	if !n.spec.witness { // a witness touches no MariaDB: no passwords on its host
		if err := config.SaveCredentials(filepath.Join(dir, initCredFile), cred); err != nil {
			return fmt.Errorf("init: %w", err)
		}
	}
	if err := n.cfg.Save(filepath.Join(dir, initConfigFile)); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	if n.proxy == nil {
		return nil
	}
	if err := issue(mtls.RoleProxy, n.proxyHosts); err != nil {
		return err
	}
	if err := writeSecretFile(filepath.Join(dir, initProxyPass), cred.ProxyPassword+"\n"); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, initProxyEnv), []byte(n.proxy.env(n.cfg.ID)), 0o644)
}

// env is sqlproxy.env for scripts/systemd/phxgo-sqlproxy@.service.
func (pp *proxyPlan) env(id uint32) string {
	return fmt.Sprintf(`# sqlproxy of node %d, read by scripts/systemd/phxgo-sqlproxy@.service (written by binlogd init):
#   sqlproxy -listen $LISTEN -binlogd $BINLOGD -http $HTTP $EXTRA_FLAGS
# plus -admin-user phxgo_proxy -admin-password-file <dir>/proxy-password.
# Add your applications' networks with -allow in EXTRA_FLAGS when they are
# not loopback or private ranges. (Also valid shell: set -a; . sqlproxy.env)
LISTEN=%s
BINLOGD=%s
HTTP=%s
EXTRA_FLAGS="%s"
`, id, pp.listen, pp.binlogd, pp.http, strings.Join(pp.extra, " "))
}

// initCredentials generates the cluster's MySQL accounts with random
// passwords, or reads the operator's file (which must be 0600 already).
// Either way the cluster gets the outside replicas' account (repl_user)
// unless the file names one.
func initCredentials(from string) (config.Credentials, error) {
	if from != "" {
		cr, err := config.LoadCredentials(from)
		if err != nil {
			return cr, fmt.Errorf("init: -credentials: %w", err)
		}
		if cr.ProxyUser == "" || cr.ProxyPassword == "" {
			return cr, fmt.Errorf("init: -credentials %s: proxy_user and proxy_password are required (sqlproxy's admin account)", from)
		}
		cr.AddReplAccount()
		return cr, nil
	}
	pw := func() string {
		b := make([]byte, 18)
		if _, err := rand.Read(b); err != nil {
			panic(err) // crypto/rand does not fail on Linux
		}
		return hex.EncodeToString(b)
	}
	return config.Credentials{
		CaptureUser: "phxgo_capture", CapturePassword: pw(),
		AppUser: "app", AppPassword: pw(),
		ProxyUser: "phxgo_proxy", ProxyPassword: pw(),
		ReplUser: config.DefaultReplUser, ReplPassword: pw(),
	}, nil
}

func writeSecretFile(path, body string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	_, err = f.WriteString(body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("init: %s: %w", path, err)
	}
	return nil
}

// printNextSteps tells the operator what was written and what to do.
func printNextSteps(w io.Writer, p *initPlan, o *initOptions) {
	fmt.Fprintf(w, "wrote a new cluster of %d nodes to %s:\n", len(p.nodes), o.out)
	for _, n := range p.nodes {
		ents, _ := os.ReadDir(filepath.Join(o.out, n.dirName()))
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		self := n.cfg.Self()
		if self.Witness {
			fmt.Fprintf(w, "  %s/  node %d: witness (binlogd only), grpc %s\n      %s\n",
				filepath.Join(o.out, n.dirName()), n.cfg.ID, self.GRPCAddr, strings.Join(names, " "))
			continue
		}
		fmt.Fprintf(w, "  %s/  node %d: grpc %s, mysql %s, proxy %s; repl_addr %s\n      %s\n",
			filepath.Join(o.out, n.dirName()), n.cfg.ID, self.GRPCAddr, self.MySQLAddr, orNone(self.ProxyAddr), n.cfg.ReplAddr, strings.Join(names, " "))
	}
	fmt.Fprintf(w, "  %s, %s  the operator's certificate (binlogd status|switchover|members -tls-*)\n",
		filepath.Join(o.out, "admin.crt"), filepath.Join(o.out, "admin.key"))
	fmt.Fprintf(w, "  %s  the application account (app_user, app_password), the outside replicas' (repl_user, repl_password; README \"Outside replicas\") and phxgo's own\n", filepath.Join(o.out, initCredFile))
	fmt.Fprintf(w, "  %s  the CA's private key: move it offline now; it is needed only to issue certificates\n", filepath.Join(o.out, mtls.CAKeyFile))
	first := p.nodes[0]
	fmt.Fprintf(w, `next steps:
  1. copy each node directory to its host as %s/node<id>/, keeping modes (keys and passwords are 0600),
     e.g. scp -rp %s %s:%s/, owned by the units' User= (chown -R mysql:mysql %s/node<id>)
  2. install bin/binlogd, bin/sqlproxy and scripts/systemd/*.service, then on each host:
     systemctl enable --now phxgo-binlogd@node<id> phxgo-sqlproxy@node<id>   (a witness: phxgo-binlogd@node<id> only)
  3. check: binlogd status -addr %s -tls-cert %s -tls-key %s -tls-ca %s
`, o.installDir, filepath.Join(o.out, first.dirName()), hostOf(first.spec.grpc), o.installDir, o.installDir,
		first.spec.grpc, filepath.Join(o.out, "admin.crt"), filepath.Join(o.out, "admin.key"), filepath.Join(o.out, mtls.CACertFile))
}

func hostOf(addr string) string {
	if i := strings.LastIndex(addr, ":"); i >= 0 {
		return strings.Trim(addr[:i], "[]")
	}
	return addr
}
