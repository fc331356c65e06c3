// Command phxcluster starts and stops a local phxgo cluster (make cluster).
//
//	phxcluster up   [-dir .cluster] [-nodes 3] [-witnesses 0] [-learners 0] [-base-port 17000] [-bin bin]
//	phxcluster down [-dir .cluster]
//	phxcluster status [-dir .cluster]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"phxgo/binlogd/localcluster"
	"phxgo/binlogd/version"
	"phxgo/internal/cli"
	pb "phxgo/proto"
)

const usage = "usage: phxcluster up|down|status [flags]  (phxcluster up -h for the flags)"

// Exit status (internal/cli): 0 done (or -h), 2 a bad command line
// (unknown command or flag, a stray argument), 1 a runtime error.
func main() {
	os.Exit(cli.Report(os.Stderr, "phxcluster", run(os.Args[1:])))
}

func run(args []string) error {
	if len(args) == 0 {
		return cli.Usagef("no command\n%s", usage)
	}
	switch a := args[0]; {
	case a == "-version" || a == "--version" || a == "version":
		version.Print(os.Stdout, "phxcluster")
		return nil
	case cli.IsHelp(a):
		fmt.Fprintln(os.Stderr, usage)
		return nil
	case a != "up" && a != "down" && a != "status":
		return cli.Usagef("unknown command %q\n%s", a, usage)
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	dir := fs.String("dir", ".cluster", "cluster directory")
	nodes := fs.Int("nodes", 3, "number of data nodes (MariaDB, binlogd, sqlproxy); nodes+witnesses odd")
	witnesses := fs.Int("witnesses", 0, "number of witnesses (binlogd only: votes on the log, no MariaDB, never master), after the data nodes")
	learners := fs.Int("learners", 0, "number of learners (MariaDB, binlogd, sqlproxy; follow the log and serve reads, never vote or become master), after the witnesses")
	base := fs.Int("base-port", 17000, "base port; node N uses base+10N .. base+10N+6")
	bin := fs.String("bin", "bin", "directory with binlogd and sqlproxy")
	lease := fs.Duration("lease", 5*time.Second, "master lease duration")
	proxy := fs.Bool("proxy", true, "start a sqlproxy per node")
	wait := fs.Duration("wait", 5*time.Minute, "how long up waits for a healthy cluster")
	tlsDir := fs.String("tls-dir", "", "certificate directory (default DIR/tls; missing certificates are issued there; a scripts/make-test-ca.sh or binlogd init directory works too; give it to status too)")
	insecureNoTLS := fs.Bool("insecure", false, "run every link without TLS (binlogd insecure_no_tls, sqlproxy -insecure): anyone who reaches the ports controls the cluster")
	if err := cli.Parse(fs, args[1:]); err != nil {
		return err
	}
	n, wids, lids := localcluster.RoleIDs(*nodes, *witnesses, *learners)
	spec := localcluster.Spec{Dir: *dir, Nodes: n, Witnesses: wids, Learners: lids, BasePort: *base, BinDir: *bin, LeaseDuration: *lease, Proxy: *proxy, TLSDir: *tlsDir, InsecureNoTLS: *insecureNoTLS}
	if abs, err := filepath.Abs(*dir); err == nil {
		spec.Dir = abs
	}
	// Keep the node count of an existing cluster.
	info, found, err := readLayout(spec.Dir)
	if err != nil {
		return err
	}
	if found {
		spec.Nodes, spec.Witnesses, spec.Learners = len(info.Nodes), nil, nil
		for _, n := range info.Nodes {
			if n.Witness {
				spec.Witnesses = append(spec.Witnesses, int(n.ID))
			}
			if !n.Voter {
				spec.Learners = append(spec.Learners, int(n.ID))
			}
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	switch args[0] {
	case "up":
		err = up(ctx, spec, *wait)
	case "down":
		err = localcluster.Open(spec).Stop()
		if err == nil {
			fmt.Println("cluster stopped; its data stays in", spec.Dir)
		}
	case "status":
		err = status(ctx, spec)
	}
	return err
}

func up(ctx context.Context, spec localcluster.Spec, wait time.Duration) error {
	c, err := localcluster.Start(ctx, spec)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "started %d nodes in %s; waiting for a master and replication...\n", spec.Nodes, spec.Dir)
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	start := time.Now()
	// A process that exits will not come back by itself: stop waiting.
	exited := make(chan []string, 1)
	go func() {
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-t.C:
			}
			if e := c.Exited(); len(e) > 0 {
				exited <- e
				cancel()
				return
			}
		}
	}()
	master, err := c.WaitHealthy(wctx, func(s string) {
		fmt.Fprintf(os.Stderr, "  %4.0fs: %s\n", time.Since(start).Seconds(), s)
	})
	if err != nil {
		select {
		case e := <-exited:
			err = fmt.Errorf("localcluster: not healthy: %s", strings.Join(e, "\n"))
		default:
		}
		return fmt.Errorf("%w\nlogs: %s/node*/binlogd.log, %s/node*/mysql/error.log", err, spec.Dir, spec.Dir)
	}
	_ = c.WriteInfo()
	b, _ := os.ReadFile(filepath.Join(spec.Dir, "cluster.json"))
	var info localcluster.Info
	_ = json.Unmarshal(b, &info)
	printUp(os.Stdout, info, master, time.Since(start).Seconds(), spec.TLSPath())
	return nil
}

// status prints every node's state; it fails (exit 1) when a node does
// not answer, so a script can tell a whole cluster from a broken one.
func status(ctx context.Context, spec localcluster.Spec) error {
	c := localcluster.Open(spec)
	var unreachable []string
	for id := 1; id <= spec.Nodes; id++ {
		st, err := c.Status(ctx, uint32(id))
		if err != nil {
			fmt.Printf("node %d: %v\n", id, err)
			unreachable = append(unreachable, strconv.Itoa(id))
			continue
		}
		role := strings.ToLower(strings.TrimPrefix(st.Role.String(), "ROLE_"))
		if st.Learner && st.Role == pb.Role_ROLE_REPLICA {
			role = "learner"
		}
		fmt.Printf("node %d: role=%s master=%d version=%d applied=%d last_valid=%q mysql=%q %s\n", id, role, st.MasterId, st.LeaseVersion, st.AppliedIndex, st.LastValidGtid, st.MysqlGtidPos, st.ReplicationState)
	}
	if len(unreachable) > 0 {
		return fmt.Errorf("node %s did not answer", strings.Join(unreachable, ", "))
	}
	return nil
}

// readLayout reads an existing cluster's cluster.json in dir: found is
// false when there is none. One that cannot be read or names no node is
// an error, not a fresh start: its node list decides how many nodes up
// starts and down stops, and taking the flags' count instead would leave
// nodes out and overwrite the file (audit, December 2026).
func readLayout(dir string) (info localcluster.Info, found bool, err error) {
	path := filepath.Join(dir, "cluster.json")
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return info, false, nil
	}
	if err != nil {
		return info, false, fmt.Errorf("read the cluster's description: %w", err)
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return info, false, fmt.Errorf("%s is damaged (%v): it lists the cluster's nodes; restore it, or move it away to start the nodes the flags say", path, err)
	}
	if len(info.Nodes) == 0 {
		return info, false, fmt.Errorf("%s lists no nodes: restore it, or move it away to start the nodes the flags say", path)
	}
	return info, true, nil
}
