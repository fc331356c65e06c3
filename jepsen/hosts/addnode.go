package hosts

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Adding a host, as README "Adding and removing nodes" says:
//
//  1. binlogd init -add -node ID=... -out INIT: its directory, certificates
//     from the cluster's CA, "join": true;
//  2. copy it to the host's /etc/phxgo/node<id>;
//  3. seed its MariaDB from a replica on another host (seedNew: `binlogd
//     reseed -from MEMBER_GRPC` on the new host when the binary has it,
//     else the cold copy scripts/seed-node.sh describes);
//  4. start its binlogd unit (READY comes once it is a member) and run
//     scripts/seed-node.sh CFG - MEMBER_GRPC with NO_START=1 on the
//     operator's host: `binlogd members add`;
//  5. start its sqlproxy unit.

// addNode brings new host h into the cluster, seeding from src (a replica
// on another host) and adding through member via.
func (l *lab) addNode(ctx context.Context, h, src, via *host) (how string, err error) {
	add := fmt.Sprintf("%d=%s,%s,%s", h.id, h.grpc(), h.mysql(), h.proxyAddr())
	out, err := l.operator(ctx, append([]string{"init", "-add", "-node", add}, l.initPaths()...)...)
	if err != nil {
		return "", err
	}
	l.logf("binlogd init -add:\n%s", out)
	if err := l.install(h); err != nil {
		return "", err
	}
	if how, err = l.seedNew(ctx, h, src); err != nil {
		return how, fmt.Errorf("seed node %d from node %d (%s): %w", h.id, src.id, how, err)
	}
	started := make(chan error, 1)
	go func() { started <- l.start(ctx, h, binlogdUnit) }()
	cfg := filepath.Join(l.etc, h.name(), "binlogd.json")
	script := filepath.Join(l.o.RepoDir, "scripts", "seed-node.sh")
	cmd := l.app.Command(ctx, "env", "BIN="+l.bin, "TLS_DIR="+l.initTo, "NO_START=1", script, cfg, "-", via.grpc())
	b, err := cmd.CombinedOutput()
	l.logf("seed-node.sh:\n%s", b)
	if err != nil {
		return how, fmt.Errorf("seed-node.sh: %w: %s", err, b)
	}
	select {
	case err = <-started:
	case <-ctx.Done():
		return how, ctx.Err()
	}
	if err != nil {
		return how, err
	}
	return how, l.start(ctx, h, proxyUnit)
}

// initPaths are init's path flags for this run's hosts.
func (l *lab) initPaths() []string {
	return []string{"-out", l.initTo,
		"-dir", filepath.Join(l.vlib, "node{id}", "binlogd"), "-mysql-dir", filepath.Join(l.vlib, "node{id}", "mysql"),
		"-install-dir", l.etc}
}

// seedNew gives the new host's MariaDB a replica's data.
func (l *lab) seedNew(ctx context.Context, h, src *host) (string, error) {
	// The new host's /var/lib/phxgo/node<id>/mysql, as the package
	// install would leave it: `binlogd reseed` (at fc60c28) does not create
	// a missing mysql_dir.
	toDir := filepath.Join(l.vlib, h.name(), "mysql")
	if err := os.MkdirAll(toDir, 0o750); err != nil {
		return "", err
	}
	if err := os.Chown(toDir, l.uid, l.gid); err != nil {
		return "", err
	}
	if l.hasReseed() {
		// On the new host, as the units' user: mariadb-backup of src,
		// streamed over binlogd's gRPC (nothing but the cluster's ports).
		cfg := filepath.Join(l.etc, h.name(), "binlogd.json")
		args := []string{"--net=/run/netns/" + h.ns.Name, "-S", strconv.Itoa(l.uid), "-G", strconv.Itoa(l.gid), "--",
			filepath.Join(l.bin, "binlogd"), "reseed", "-config", cfg, "-from", src.grpc()}
		out, err := exec.CommandContext(ctx, "nsenter", args...).CombinedOutput()
		l.logf("binlogd reseed:\n%s", out)
		if err != nil {
			return "reseed", fmt.Errorf("%w: %s", err, out)
		}
		return "reseed", nil
	}
	return "cold-copy", l.coldCopy(ctx, h, src)
}

// hasReseed reports whether the installed binlogd has `binlogd reseed`.
func (l *lab) hasReseed() bool {
	out, _ := exec.Command(filepath.Join(l.bin, "binlogd"), "reseed", "-h").CombinedOutput()
	return !strings.Contains(string(out), `unknown command "reseed"`)
}

// coldCopy is seed-node.sh's "Alternative to step 1": stop the replica's
// units (its binlogd stops its MariaDB safely; the others keep a
// majority), copy its mysql_dir/data to the new host's (rsync between real
// hosts), drop the copy's server identity and replication state, start
// the replica again.
func (l *lab) coldCopy(ctx context.Context, h, src *host) error {
	if err := l.stop(ctx, src); err != nil {
		return err
	}
	from := filepath.Join(l.vlib, src.name(), "mysql", "data")
	toDir := filepath.Join(l.vlib, h.name(), "mysql")
	if out, err := exec.CommandContext(ctx, "cp", "-a", from, filepath.Join(toDir, "data")).CombinedOutput(); err != nil {
		return fmt.Errorf("copy %s: %v: %s", from, err, out)
	}
	drop, _ := filepath.Glob(filepath.Join(toDir, "data", "relay*.0*"))
	for _, f := range []string{"auto.cnf", "master.info", "relay-log.info"} {
		drop = append(drop, filepath.Join(toDir, "data", f))
	}
	for _, f := range drop {
		if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	start := time.Now()
	if err := l.start(ctx, src, binlogdUnit); err != nil {
		return err
	}
	l.logf("node %d: binlogd back %.1fs after the copy", src.id, time.Since(start).Seconds())
	return l.start(ctx, src, proxyUnit)
}
