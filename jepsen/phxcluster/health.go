package phxcluster

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"phxgo/binlogd/binlog"
	pb "phxgo/proto"
)

// Master returns the node that reports itself the ready master. When
// several do (a deposed master that has not heard yet), the one most
// nodes name wins. It polls until one is found or ctx ends.
func (c *Cluster) Master(ctx context.Context) (uint32, error) {
	for {
		if m, err := c.master(ctx); err == nil {
			return m, nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("%w: %w", ErrNoMaster, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *Cluster) master(ctx context.Context) (uint32, error) {
	claims := map[uint32]int{} // ready masters -> how many nodes name them
	named := map[uint32]int{}
	for _, n := range c.nodes {
		st, err := c.lc.Status(ctx, n.ID)
		if err != nil {
			continue
		}
		if st.Role == pb.Role_ROLE_MASTER && st.Ready {
			claims[st.NodeId] = 0
		}
		if st.MasterId != 0 {
			named[st.MasterId]++
		}
	}
	best, votes := uint32(0), -1
	for m := range claims {
		if named[m] > votes || (named[m] == votes && m < best) {
			best, votes = m, named[m]
		}
	}
	if best == 0 {
		return 0, ErrNoMaster
	}
	return best, nil
}

// WaitHealthy returns once localcluster.HealthyUpTo holds (one ready
// master in every node's view, every replica applied the valid log as of
// when only their lag was missing; under a running workload they never
// hold its newest entry) and every node's sqlproxy answers a query, or
// ctx ends.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	var last error
	var target binlog.GTID // see localcluster.HealthyUpTo
	report := time.Now()
	for {
		if err := c.reseedLost(ctx); err != nil {
			return err
		}
		last = c.healthy(ctx, &target)
		if last == nil {
			return nil
		}
		if time.Since(report) > 5*time.Second {
			slog.Info("phxcluster: waiting for health", "why", last)
			report = time.Now()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %w)", ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (c *Cluster) healthy(ctx context.Context, target *binlog.GTID) error {
	master, err := c.lc.HealthyUpTo(ctx, target)
	if err != nil {
		return err
	}
	if err := c.checkRoles(ctx, master); err != nil {
		return err
	}
	c.mu.Lock()
	dbReady := c.dbReady
	c.mu.Unlock()
	if !dbReady {
		if err := c.exec(ctx, c.nodes[master-1].ProxyAddr, "", "CREATE DATABASE IF NOT EXISTS "+Database); err != nil {
			return fmt.Errorf("create database via n%d's proxy: %w", master, err)
		}
		c.mu.Lock()
		c.dbReady = true
		c.mu.Unlock()
		c.checkpointDisks() // the installation is on disk, as on a host that ran a while
	}
	for _, n := range c.nodes {
		if n.Witness {
			continue // no proxy
		}
		if err := c.exec(ctx, n.ProxyAddr, Database, "SELECT 1"); err != nil {
			return fmt.Errorf("n%d's proxy: %w", n.ID, err)
		}
	}
	return nil
}

func (c *Cluster) exec(ctx context.Context, addr, db, stmt string) error {
	d, err := c.openDB(addr, db)
	if err != nil {
		return err
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = d.ExecContext(ctx, stmt)
	return err
}

// checkRoles: the master is a voter with MariaDB, and every learner the
// cluster was launched with says it is one (a binlogd that ignored
// members[].learner would vote and make the run test something else).
func (c *Cluster) checkRoles(ctx context.Context, master uint32) error {
	for _, n := range c.nodes {
		if n.ID == master && (n.Witness || n.Learner) {
			return fmt.Errorf("n%d is master but was launched as a witness or learner", n.ID)
		}
		if !n.Learner {
			continue
		}
		st, err := c.lc.Status(ctx, n.ID)
		if err != nil {
			return fmt.Errorf("n%d: %w", n.ID, err)
		}
		if !st.Learner {
			return fmt.Errorf("n%d was launched as a learner but its status does not say learner (role %s)", n.ID, st.Role)
		}
	}
	return nil
}
