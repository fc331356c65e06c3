package netns

import (
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"strings"
)

// Chain is the iptables chain (filter table, jumped to from INPUT) that
// holds the partition rules.
const Chain = "PHXJEPSEN"

// EnsureIPTables checks that iptables(8) exists and installs it with apt
// if it does not.
func EnsureIPTables(ctx context.Context) error {
	if _, err := exec.LookPath("iptables"); err == nil {
		return nil
	}
	slog.Info("netns: iptables missing, installing with apt-get")
	if err := run(ctx, "apt-get", "update", "-qq"); err != nil {
		return err
	}
	if err := run(ctx, "apt-get", "install", "-y", "-qq", "iptables"); err != nil {
		return err
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		return fmt.Errorf("iptables still missing after apt-get install: %w", err)
	}
	return nil
}

// Link is an unordered pair of addresses whose traffic is cut.
type Link [2]string

// ipt runs iptables inside the namespace (-w: wait for the xtables lock).
func (n *NS) ipt(ctx context.Context, args ...string) error {
	_, err := n.Run(ctx, "iptables", append([]string{"-w"}, args...)...)
	return err
}

// ensureChain creates the chain and the INPUT jump once.
func (n *NS) ensureChain(ctx context.Context) error {
	if err := n.ipt(ctx, "-L", Chain, "-n"); err != nil {
		if err := n.ipt(ctx, "-N", Chain); err != nil {
			return err
		}
	}
	if err := n.ipt(ctx, "-C", "INPUT", "-j", Chain); err != nil {
		return n.ipt(ctx, "-I", "INPUT", "-j", Chain)
	}
	return nil
}

// CutLinks drops all traffic between the two addresses of each link, in
// both directions, adding to any cuts already in place.
func (n *NS) CutLinks(ctx context.Context, links []Link) error {
	if err := n.ensureChain(ctx); err != nil {
		return err
	}
	for _, l := range links {
		for _, dir := range [][2]string{{l[0], l[1]}, {l[1], l[0]}} {
			if err := n.ipt(ctx, "-A", Chain, "-s", dir[0], "-d", dir[1], "-j", "DROP"); err != nil {
				return err
			}
		}
	}
	return nil
}

// Heal removes every cut.
func (n *NS) Heal(ctx context.Context) error {
	if err := n.ensureChain(ctx); err != nil {
		return err
	}
	return n.ipt(ctx, "-F", Chain)
}

// Rules returns the current cut rules (iptables -S of the chain), for logs.
func (n *NS) Rules(ctx context.Context) (string, error) {
	out, err := n.Run(ctx, "iptables", "-w", "-S", Chain)
	return strings.TrimSpace(string(out)), err
}
