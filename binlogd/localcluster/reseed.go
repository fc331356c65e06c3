package localcluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// ReseedNode does what an operator does for a node whose status says
// reseed_needed: stop its binlogd and sqlproxy, `binlogd reseed` (a copy
// of the most caught-up replica's MariaDB; the old datadir is discarded),
// start both again. It returns the tool's output (progress, position).
func (c *Cluster) ReseedNode(ctx context.Context, id uint32) (string, error) {
	if err := c.StopNode(ctx, id); err != nil {
		return "", fmt.Errorf("localcluster: stop node %d to reseed it: %w", id, err)
	}
	argv := []string{filepath.Join(c.Spec.BinDir, "binlogd"), "reseed", "-discard-old", "-progress", "5s",
		"-config", filepath.Join(c.Spec.NodeDir(int(id)), "binlogd.json")}
	if c.Spec.NetNS != "" {
		argv = append([]string{"ip", "netns", "exec", c.Spec.NetNS}, argv...)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = binlogdEnv(os.Environ())
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("localcluster: reseed node %d: %w\n%s", id, err, out)
	}
	if err := c.StartNode(id); err != nil {
		return string(out), err
	}
	return string(out), c.WriteInfo()
}
