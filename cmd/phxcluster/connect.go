package main

import (
	"fmt"
	"io"
	"path/filepath"

	"phxgo/binlogd/localcluster"
	"phxgo/binlogd/mtls"
)

// printUp is what `make cluster` prints once the cluster is healthy: each
// node's role and addresses, how to connect as the app, the outside
// replicas' account (README "Outside replicas": it may only dump the log,
// from any data node's replication endpoint), and the status and stop
// commands. tlsDir is the certificate directory ("" without TLS).
func printUp(w io.Writer, info localcluster.Info, master uint32, took float64, tlsDir string) {
	fmt.Fprintf(w, "phxgo cluster is up: %d nodes, master is node %d (%.1fs)\n\n", len(info.Nodes), master, took)
	for _, n := range info.Nodes {
		switch {
		case n.Witness:
			fmt.Fprintf(w, "  node %d: witness (binlogd only)                    binlogd %s\n", n.ID, n.BinlogdAddr)
		default:
			role := "voter"
			if !n.Voter {
				role = "learner"
			}
			fmt.Fprintf(w, "  node %d: %-7s proxy %-16s mariadb %-16s binlogd %-16s repl %s\n", n.ID, role, n.ProxyAddr, n.MySQLAddr, n.BinlogdAddr, n.ReplAddr)
		}
	}
	var first *localcluster.NodeInfo // the first data node: witnesses have no proxy
	for i := range info.Nodes {
		if !info.Nodes[i].Witness {
			first = &info.Nodes[i]
			break
		}
	}
	if first == nil {
		return
	}
	host, port := splitAddr(first.ProxyAddr)
	if host == "" { // no proxies (-proxy=false): the master's MariaDB
		for _, n := range info.Nodes {
			if n.ID == master {
				host, port = splitAddr(n.MySQLAddr)
			}
		}
	}
	fmt.Fprintf(w, "\nconnect (any node's proxy; statements run on the master):\n  mariadb -h%s -P%s -u%s -p%s\n", host, port, info.AppUser, info.AppPass)
	if info.ReplUser != "" {
		rhost, rport := splitAddr(first.ReplAddr)
		ssl := ""
		if tlsDir != "" { // the endpoint then takes this account over TLS only
			ssl = fmt.Sprintf(", MASTER_SSL=1, MASTER_SSL_CA='%s', MASTER_SSL_VERIFY_SERVER_CERT=1", filepath.Join(tlsDir, mtls.CACertFile))
		}
		fmt.Fprintf(w, "outside replicas (dump only; README \"Outside replicas\"): account %s / %s on any data node's repl endpoint (replica server_id >= 3000):\n"+
			"  CHANGE MASTER TO MASTER_HOST='%s', MASTER_PORT=%s, MASTER_USER='%s', MASTER_PASSWORD='%s', MASTER_USE_GTID=slave_pos%s\n",
			info.ReplUser, info.ReplPass, rhost, rport, info.ReplUser, info.ReplPass, ssl)
	}
	creds := "-insecure"
	if tlsDir != "" {
		creds = "-tls-dir " + tlsDir // the admin certificate
	}
	fmt.Fprintf(w, "status:  bin/binlogd cluster status -addr %s %s\nstop:    make cluster-down\n", info.Nodes[0].BinlogdAddr, creds)
}

func splitAddr(a string) (string, string) {
	for i := len(a) - 1; i >= 0; i-- {
		if a[i] == ':' {
			return a[:i], a[i+1:]
		}
	}
	return "", ""
}
