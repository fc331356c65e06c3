package cpuprio

import (
	"errors"
	"log/slog"
	"os/exec"
	"sync"
	"sync/atomic"
)

// childNice is the nice value StartChild gives helper processes; unset
// (noChild) until SetChildNice.
var childNice atomic.Int64

const noChild = 1 << 40

func init() { childNice.Store(noChild) }

// SetChildNice sets the nice value of every helper process started with
// StartChild or RunChild from now on: event hooks, mariadb-backup and
// mbstream for a reseed, mariadb-install-db. They are database work, not
// the node's consensus: at binlogd's own raised value a backup streamed
// to a joining node would take the CPU from the MariaDB serving clients.
func SetChildNice(n int) { childNice.Store(int64(n)) }

// StartChild starts cmd at the nice value SetChildNice set, or at this
// thread's own value when none is set or this process may not lower to
// it (a child inherits it; raising never needs privilege).
func StartChild(cmd *exec.Cmd) error {
	n := childNice.Load()
	if n == noChild {
		return cmd.Start()
	}
	err := Start(cmd, int(n))
	if errors.Is(err, ErrPermission) {
		lowerOnce.Do(func() {
			slog.Warn("helper processes run at binlogd's own nice value: it may not lower them to mysql_nice",
				"mysql_nice", n, "cmd", cmd.Path, "err", err)
		})
		return cmd.Start() // Start failed before forking: cmd is unused
	}
	return err
}

// lowerOnce: the fallback is logged once, not per hook run.
var lowerOnce sync.Once

// RunChild is cmd.Run through StartChild.
func RunChild(cmd *exec.Cmd) error {
	if err := StartChild(cmd); err != nil {
		return err
	}
	return cmd.Wait()
}
