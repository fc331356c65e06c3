package nemesis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Crash kinds beyond one node at a time.
const (
	// KillMajority SIGKILLs every process of a majority of the nodes at
	// once, and every other time of all nodes; heal restarts them all at
	// once through the normal recovery path (binlogd recover, then
	// mariadbd), with no node left to hand the log over.
	KillMajority = "kill-majority"
	// Logd SIGKILLs only the master's binlogd; its mariadbd keeps running
	// with commits blocked in the semi-sync wait (no ACK can come). Held
	// at least two leases, so another node takes over meanwhile; heal
	// starts binlogd again, which adopts the running mariadbd (and kills
	// it for recovery if commits still wait). What it tests: clients
	// waiting on COMMIT get an answer in bounded time (the run's
	// -latency-bound) and no fork follows.
	Logd = "logd"
)

func init() {
	register(KillMajority, (*Nemesis).killMajority)
	register(Logd, (*Nemesis).killLogd)
}

// killMajority kills a majority (odd faults) or all nodes (even faults).
func (n *Nemesis) killMajority(ctx context.Context) (*Active, error) {
	ids := shuffled(n.rng, n.ids())
	victims, what := ids[:len(ids)/2+1], "majority"
	if n.crashes%2 == 1 {
		victims, what = ids, "all"
	}
	n.crashes++
	a := &Active{Kind: KillMajority, Desc: fmt.Sprintf("kill -9 %s %v (mysqld+binlogd+sqlproxy)", what, victims),
		heal: func(ctx context.Context) error {
			return n.each(victims, func(id uint32) error { return n.c.Restart(ctx, id) })
		}}
	if err := n.each(victims, n.c.KillNode); err != nil {
		return a, fmt.Errorf("%s: %w", a.Desc, err)
	}
	return a, nil
}

// killLogd kills the master's binlogd alone.
func (n *Nemesis) killLogd(ctx context.Context) (*Active, error) {
	mctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	id, err := n.c.Master(mctx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("logd: no master to hit: %w", err)
	}
	a := &Active{Kind: Logd, Desc: fmt.Sprintf("kill -9 binlogd of master n%d (mariadbd keeps running)", id),
		MinHold: 2 * n.lease,
		heal:    func(ctx context.Context) error { return n.c.Restart(ctx, id) }}
	if err := n.c.KillBinlogd(id); err != nil {
		return a, fmt.Errorf("%s: %w", a.Desc, err)
	}
	return a, nil
}

// each runs f on every id at once (a crash of several nodes is one
// instant, not a sequence) and joins the errors.
func (n *Nemesis) each(ids []uint32, f func(id uint32) error) error {
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(id); err != nil {
				errs[i] = fmt.Errorf("n%d: %w", id, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
