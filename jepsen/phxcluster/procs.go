package phxcluster

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"
)

// Process names as localcluster knows them.
const (
	procMysqld  = "mariadbd"
	procBinlogd = "binlogd"
	procProxy   = "sqlproxy"
)

// killTimeout bounds the wait for a SIGKILLed process to disappear.
const killTimeout = 30 * time.Second

// Pids of node id's processes, 0 for one not running.
func (c *Cluster) Pids(id uint32) (mysqld, binlogd, sqlproxy int) {
	return c.lc.Pid(id, procMysqld), c.lc.Pid(id, procBinlogd), c.lc.Pid(id, procProxy)
}

func (c *Cluster) kill(procs ...string) func(id uint32) error {
	return func(id uint32) error {
		ctx, cancel := context.WithTimeout(context.Background(), killTimeout)
		defer cancel()
		var errs []error
		for _, p := range procs {
			if err := c.lc.Kill(ctx, id, p); err != nil {
				errs = append(errs, fmt.Errorf("kill %s on n%d: %w", p, id, err))
			}
		}
		c.forgetPaused(id)
		return errors.Join(errs...)
	}
}

// KillMysqld SIGKILLs node id's mariadbd; its binlogd restarts it. A
// witness runs none: ErrNoMariaDB.
func (c *Cluster) KillMysqld(id uint32) error {
	if c.witness(id) {
		return fmt.Errorf("%w: n%d", ErrNoMariaDB, id)
	}
	return c.kill(procMysqld)(id)
}

// KillBinlogd SIGKILLs node id's binlogd (its mariadbd keeps running).
func (c *Cluster) KillBinlogd(id uint32) error { return c.kill(procBinlogd)(id) }

// KillNode SIGKILLs all of node id's processes, binlogd first so that it
// cannot restart the mariadbd killed next.
func (c *Cluster) KillNode(id uint32) error { return c.kill(procBinlogd, procMysqld, procProxy)(id) }

// Restart starts node id's binlogd and sqlproxy if they are down (binlogd
// runs recovery and starts mariadbd, or adopts a running one) and returns
// once both run.
func (c *Cluster) Restart(ctx context.Context, id uint32) error {
	if err := c.Resume(id); err != nil {
		return err
	}
	if err := c.lc.StartNode(id); err != nil {
		return err
	}
	_ = c.lc.WriteInfo()
	for {
		_, b, p := c.Pids(id)
		if b != 0 && (p != 0 || c.witness(id)) { // a witness runs no sqlproxy
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: n%d binlogd=%d sqlproxy=%d: %w", ErrNotRunning, id, b, p, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
		// A process that died right after its start (a port still in
		// TIME_WAIT, a crash) is started again.
		if err := c.lc.StartNode(id); err != nil {
			return err
		}
	}
}

// Pause SIGSTOPs node id's binlogd, or all its processes if whole (a
// witness's all is its binlogd).
func (c *Cluster) Pause(id uint32, whole bool) error {
	procs := []string{procBinlogd}
	if whole && !c.witness(id) {
		procs = []string{procProxy, procBinlogd, procMysqld}
	}
	var errs []error
	for _, p := range procs {
		pid := c.lc.Pid(id, p)
		if pid == 0 {
			errs = append(errs, fmt.Errorf("pause %s on n%d: not running", p, id))
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			errs = append(errs, fmt.Errorf("pause %s on n%d: %w", p, id, err))
			continue
		}
		c.mu.Lock()
		c.paused[id] = append(c.paused[id], pid)
		c.mu.Unlock()
	}
	return errors.Join(errs...)
}

// Resume SIGCONTs whatever Pause stopped on node id.
func (c *Cluster) Resume(id uint32) error {
	c.mu.Lock()
	pids := c.paused[id]
	delete(c.paused, id)
	c.mu.Unlock()
	for _, pid := range pids {
		// ESRCH: it died meanwhile (killed); nothing to continue.
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
	return nil
}

func (c *Cluster) forgetPaused(id uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var keep []int
	for _, pid := range c.paused[id] {
		if syscall.Kill(pid, 0) == nil {
			keep = append(keep, pid)
		}
	}
	c.paused[id] = keep
}
