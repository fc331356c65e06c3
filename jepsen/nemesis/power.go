package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Power cuts the power of one node, a majority or all nodes at once
// (taken in turn): every process of those nodes is SIGKILLed at one
// instant and their disks lose whatever was not fsynced (jepsen/lazyfs);
// heal restarts them through the normal recovery path. What it tests: a
// commit acknowledged to a client was on a majority's disks, not in their
// page caches, and nothing unacknowledged comes back. Not part of "all"
// (it needs the cluster on lazyfs): name it, e.g. -nemesis power,kill.
const Power = "power"

// ErrNoPowerCut: the power nemesis asked of a cluster whose disks cannot
// lose power (phxcluster without Options.LazyFS).
var ErrNoPowerCut = errors.New("power nemesis needs a cluster on lazyfs (phxcluster Options.LazyFS, cmd/jepsen -lazyfs)")

// PowerCutter is a cluster.Cluster whose nodes' disks can lose power.
type PowerCutter interface {
	// PowerCut SIGKILLs every process of the nodes ids at one instant,
	// then drops what their filesystems had not made durable. The nodes
	// stay down until Restart.
	PowerCut(ctx context.Context, ids []uint32) error
}

// Power is opt-in, not part of "all": it needs a cluster on lazyfs.
func init() { injectors[Power] = (*Nemesis).power }

// power cuts one node (the master or a random one), then a majority,
// then all nodes, then one node twice: again while it restarts from the
// first cut (powerInRecovery), and again.
func (n *Nemesis) power(ctx context.Context) (*Active, error) {
	pc, ok := n.c.(PowerCutter)
	if !ok {
		return nil, ErrNoPowerCut
	}
	if n.powers%4 == 3 {
		n.powers++
		return n.powerInRecovery(ctx, pc)
	}
	var victims []uint32
	var what string
	switch n.powers % 4 {
	case 0:
		id, who := n.target(ctx, 0.5)
		victims, what = []uint32{id}, who
	case 1:
		ids := shuffled(n.rng, n.ids())
		victims, what = ids[:len(ids)/2+1], "majority"
	default:
		victims, what = n.ids(), "all"
	}
	n.powers++
	slices.Sort(victims)
	a := &Active{Kind: Power, Desc: fmt.Sprintf("power loss %s %v (unsynced writes dropped, every process killed)", what, victims),
		heal: func(ctx context.Context) error {
			return n.each(victims, func(id uint32) error { return n.c.Restart(ctx, id) })
		}}
	if err := pc.PowerCut(ctx, victims); err != nil {
		return a, fmt.Errorf("%s: %w", a.Desc, err)
	}
	return a, nil
}

// powerInRecovery cuts one node's power, restarts it, and cuts it again
// 0.2-3 s later: while binlogd recovers its log and MariaDB its InnoDB
// (on a loaded host MariaDB's crash recovery takes seconds). Recovery
// must survive its own interruption: nothing it writes may be needed
// before it is durable. Its first run (TestJepsenPowerShort seed 1) left
// a replica whose relay log was gone under its metadata (role
// TestBecomeReplicaAfterRelayLogLost).
func (n *Nemesis) powerInRecovery(ctx context.Context, pc PowerCutter) (*Active, error) {
	id := n.randomNode()
	after := 200*time.Millisecond + time.Duration(n.rng.Int64N(int64(2800*time.Millisecond)))
	victims := []uint32{id}
	a := &Active{Kind: Power, Desc: fmt.Sprintf("power loss in recovery [%d] (cut, restarted, cut again %.1fs later)", id, after.Seconds()),
		heal: func(ctx context.Context) error { return n.c.Restart(ctx, id) }}
	if err := pc.PowerCut(ctx, victims); err != nil {
		return a, fmt.Errorf("%s: %w", a.Desc, err)
	}
	if err := n.c.Restart(ctx, id); err != nil {
		return a, fmt.Errorf("%s: restart: %w", a.Desc, err)
	}
	select {
	case <-ctx.Done():
		return a, ctx.Err()
	case <-time.After(after):
	}
	if err := pc.PowerCut(ctx, victims); err != nil {
		return a, fmt.Errorf("%s: second cut: %w", a.Desc, err)
	}
	return a, nil
}
