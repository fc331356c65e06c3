package phxcluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"

	"phxgo/binlogd/localcluster"
	"phxgo/jepsen/lazyfs"
	"phxgo/jepsen/nemesis"
)

var _ nemesis.PowerCutter = (*Cluster)(nil)

// ErrNoLazyFS: PowerCut on a cluster launched without Options.LazyFS.
var ErrNoLazyFS = errors.New("phxcluster: nodes are not on lazyfs (Options.LazyFS)")

// unbuffered are the logs kept through a power loss for the post-mortem
// (binlogd.log, sqlproxy.log, MariaDB's error.log); nothing reads them
// for recovery.
var unbuffered = []string{"binlogd.log", "sqlproxy.log", "error.log"}

// mountDisks puts every node directory (binlogd's dir, MariaDB's datadir
// under it) on its own lazyfs, backed by <Dir>/disks/nodeN, each served
// by a helper process (its log: <Dir>/disks/nodeN.lazyfs.log).
func mountDisks(ls localcluster.Spec, o Options) (map[uint32]*lazyfs.FS, error) {
	disks := map[uint32]*lazyfs.FS{}
	for i := 1; i <= ls.Nodes; i++ {
		mnt, back := ls.NodeDir(i), filepath.Join(ls.Dir, "disks", fmt.Sprintf("node%d", i))
		for _, d := range []string{mnt, back} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				unmountDisks(disks)
				return nil, err
			}
		}
		fs, err := lazyfs.Mount(mnt, back, lazyfs.Options{Unbuffered: unbuffered, FsyncPersistsName: !o.LazyFSStrictNames,
			Server: o.LazyFSServer})
		if err != nil {
			unmountDisks(disks)
			return nil, fmt.Errorf("phxcluster: node %d on lazyfs: %w", i, err)
		}
		disks[uint32(i)] = fs
	}
	return disks, nil
}

func unmountDisks(disks map[uint32]*lazyfs.FS) error {
	var errs []error
	for id, fs := range disks {
		if err := fs.Unmount(); err != nil {
			errs = append(errs, fmt.Errorf("n%d: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// checkpointDisks makes everything on the nodes' disks durable: the
// installation (mariadb-install-db, configs), as a host that ran for a
// while would have written it back.
func (c *Cluster) checkpointDisks() {
	for id, fs := range c.disks {
		if err := fs.Checkpoint(); err != nil {
			slog.Warn("phxcluster: checkpoint lazyfs", "node", id, "err", err)
		}
	}
}

// PowerCut SIGKILLs every process of the nodes ids at one instant, waits
// until they are gone, then drops each node's unsynced writes and names
// (lazyfs.FS.DropUnsynced). The nodes stay down until Restart.
func (c *Cluster) PowerCut(ctx context.Context, ids []uint32) error {
	if c.disks == nil {
		return ErrNoLazyFS
	}
	var pids []int
	for _, id := range ids {
		c.forgetPaused(id)
		m, b, p := c.Pids(id)
		pids = append(pids, b, m, p)
	}
	for _, pid := range pids {
		if pid != 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	var errs []error
	for _, id := range ids {
		// Waits until each is gone (a zombie main thread holds files open).
		if err := c.kill(procBinlogd, procMysqld, procProxy)(id); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, id := range ids {
		fs, ok := c.disks[id]
		if !ok {
			return fmt.Errorf("phxcluster: n%d has no lazyfs", id)
		}
		d, err := fs.DropUnsynced()
		if err != nil {
			return fmt.Errorf("phxcluster: power loss on n%d: %w", id, err)
		}
		slog.Info("phxcluster: power loss", "node", id, "files_reverted", d.Files, "bytes_put_back", d.Bytes, "names", d.Moved)
	}
	return nil
}
