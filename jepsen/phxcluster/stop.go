package phxcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// Stop SIGKILLs every process (the data is scratch: no graceful stop is
// owed to it) and copies each node's logs to LaunchSpec.LogDir. It is
// idempotent.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		var errs []error
		for _, n := range c.nodes {
			_ = c.Resume(n.ID)
			if err := c.KillNode(n.ID); err != nil {
				errs = append(errs, err)
			}
		}
		if err := c.lc.Stop(); err != nil { // closes gRPC conns, rewrites cluster.json
			errs = append(errs, err)
		}
		if c.spec.LogDir != "" {
			errs = append(errs, c.saveLogs(c.spec.LogDir))
		}
		errs = append(errs, unmountDisks(c.disks)) // the backing dirs stay under Dir
		c.stopErr = errors.Join(errs...)
	})
	return c.stopErr
}

// saveLogs copies every node's logs to dir and writes, per node, its Paxos
// log with every entry's verdict (binlogd log) and the rejected entries
// alone (binlogd log -rejected).
func (c *Cluster) saveLogs(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var errs []error
	for _, n := range c.nodes {
		nd := c.lc.Spec.NodeDir(int(n.ID))
		for _, f := range []string{"binlogd.log", "sqlproxy.log", "mysql/error.log"} {
			dst := filepath.Join(dir, fmt.Sprintf("n%d-%s", n.ID, filepath.Base(f)))
			if err := copyFile(filepath.Join(nd, f), dst); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
		for name, args := range map[string][]string{"paxos-rejected.txt": {"-rejected"}, "paxos-log.txt": nil} {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			out, err := exec.CommandContext(ctx, filepath.Join(c.spec.BinDir, "binlogd"),
				append([]string{"log", "-config", filepath.Join(nd, "binlogd.json")}, args...)...).CombinedOutput()
			cancel()
			if err != nil {
				out = append(out, []byte("\nbinlogd log: "+err.Error()+"\n")...)
			}
			if werr := os.WriteFile(filepath.Join(dir, fmt.Sprintf("n%d-%s", n.ID, name)), out, 0o644); werr != nil {
				errs = append(errs, werr)
			}
		}
	}
	if err := copyFile(filepath.Join(c.lc.Spec.Dir, "cluster.json"), filepath.Join(dir, "cluster.json")); err != nil {
		errs = append(errs, err)
	}
	err := errors.Join(errs...)
	if err != nil {
		slog.Warn("phxcluster: saving logs", "err", err)
	}
	return err
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
