package phxcluster

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"phxgo/binlogd/node"
	pb "phxgo/proto"
)

// maxReseeds bounds how often one node is reseeded in a run: a node that
// loses its datadir again right after a reseed points at the reseed, not
// at a fault, and must fail the run rather than loop.
const maxReseeds = 2

// reseedLost does what an operator does for a node that reports its
// datadir lost (UNSAFE, reseed_needed; seen after power losses while
// lazyfs lost a new .ibd's fallocate'd size, a gap since fixed): it
// reseeds the node from a replica (localcluster.ReseedNode). The
// workload's checker still judges every acknowledged write: a reseed
// copies a replica, it cannot bring back what the log lost. Each reseed
// is kept for the results (Reseeded).
func (c *Cluster) reseedLost(ctx context.Context) error {
	for _, n := range c.nodes {
		st, err := c.lc.Status(ctx, n.ID)
		if err != nil || !st.ReseedNeeded || st.Role != pb.Role_ROLE_UNSAFE || !strings.HasPrefix(st.UnsafeReason, node.DatadirLostReason) {
			continue
		}
		c.mu.Lock()
		done := 0
		for _, r := range c.reseeded {
			if r.ID == n.ID {
				done++
			}
		}
		c.mu.Unlock()
		if done >= maxReseeds {
			return fmt.Errorf("n%d lost its datadir again after %d reseeds: %s", n.ID, done, st.UnsafeReason)
		}
		slog.Warn("phxcluster: reseeding a node whose datadir cannot be recovered", "node", n.ID, "reason", st.UnsafeReason)
		start := time.Now()
		out, err := c.lc.ReseedNode(ctx, n.ID)
		if err != nil {
			return fmt.Errorf("reseed n%d: %w", n.ID, err)
		}
		slog.Info("phxcluster: reseeded", "node", n.ID, "took", time.Since(start).Round(time.Millisecond), "output", out)
		c.mu.Lock()
		c.reseeded = append(c.reseeded, Reseed{ID: n.ID, Reason: st.UnsafeReason, At: start, Took: time.Since(start)})
		c.mu.Unlock()
	}
	return nil
}

// Reseed is one node the harness reseeded because its datadir was lost.
type Reseed struct {
	ID     uint32        `json:"node"`
	Reason string        `json:"reason"`
	At     time.Time     `json:"at"`
	Took   time.Duration `json:"took_ns"`
}

// Reseeded lists the reseeds so far, in order.
func (c *Cluster) Reseeded() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, r := range c.reseeded {
		out = append(out, fmt.Sprintf("n%d at %s in %s: %s", r.ID, r.At.Format("15:04:05"), r.Took.Round(time.Second), r.Reason))
	}
	return out
}
