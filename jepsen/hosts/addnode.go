package hosts

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
)

// Adding a host, as README "Adding and removing nodes" says:
//
//  1. binlogd init -add -node ID=... -out INIT: its directory, certificates
//     from the cluster's CA, "join": true;
//  2. copy it to the host's /etc/phxgo/node<id>;
//  3. seed its MariaDB from a replica on another host: `binlogd reseed
//     -config NODE.json -from MEMBER_GRPC` on the new host, as the units'
//     user (mariadb-backup streamed over binlogd's gRPC);
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
	// On the new host, as the units' user: mariadb-backup of src, streamed
	// over binlogd's gRPC (nothing but the cluster's ports).
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
