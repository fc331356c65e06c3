package failover

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
	"time"

	"phxgo/binlogd/localcluster"
)

// load is Threads clients inserting one row per statement through the
// proxies, each starting on its own node and moving to the next node
// after an error, the way an application with a list of proxies does.
type load struct {
	acks   atomic.Int64
	killNS atomic.Int64 // the kill, ns since start; 0 before it
	// firstNS is the completion of the first ack invoked after the kill,
	// ns since start; 0 until one comes.
	firstNS    atomic.Int64
	acksAtKill atomic.Int64
	start      time.Time
	wg         sync.WaitGroup
	cancel     context.CancelFunc
}

// insertTimeout bounds one INSERT: a statement stuck on the dead master
// gives up and the client moves on, as an application's would.
const insertTimeout = 2 * time.Second

func startLoad(c *localcluster.Cluster, threads int) (*load, error) {
	ids := c.IDs()
	dbs := map[uint32]*sql.DB{}
	for _, id := range ids {
		db, err := c.AppDB(c.ProxyAddr(id))
		if err != nil {
			for _, d := range dbs {
				d.Close()
			}
			return nil, err
		}
		db.SetMaxOpenConns(threads)
		db.SetMaxIdleConns(threads)
		dbs[id] = db
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{start: time.Now(), cancel: cancel}
	for i := 0; i < threads; i++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			l.client(ctx, i, ids, dbs)
		}()
	}
	go func() {
		l.wg.Wait()
		for _, d := range dbs {
			d.Close()
		}
	}()
	return l, nil
}

func (l *load) now() int64 { return int64(time.Since(l.start)) }

func (l *load) client(ctx context.Context, thread int, ids []uint32, dbs map[uint32]*sql.DB) {
	node := thread % len(ids)
	for ctx.Err() == nil {
		invoke := l.now()
		qctx, cancel := context.WithTimeout(ctx, insertTimeout)
		_, err := dbs[ids[node]].ExecContext(qctx, "INSERT INTO app_failover.t (thread) VALUES (?)", thread)
		cancel()
		if err != nil {
			node = (node + 1) % len(ids)
			// A short pause so 64 clients do not spin on a refused port.
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
			continue
		}
		done := l.now()
		l.acks.Add(1)
		if k := l.killNS.Load(); k > 0 && invoke > k {
			// Keep the earliest completion among the first acks.
			for {
				f := l.firstNS.Load()
				if (f != 0 && f <= done) || l.firstNS.CompareAndSwap(f, done) {
					break
				}
			}
		}
	}
}

// markKill notes the kill; acks invoked after it count as served by the
// new master.
func (l *load) markKill(at time.Time) {
	l.acksAtKill.Store(l.acks.Load())
	l.killNS.Store(int64(at.Sub(l.start)))
}

// firstWrite is the first ack after the kill, measured from it (0: none yet).
func (l *load) firstWrite() time.Duration {
	f := l.firstNS.Load()
	if f == 0 {
		return 0
	}
	return time.Duration(f - l.killNS.Load())
}

func (l *load) stop() {
	l.cancel()
	l.wg.Wait()
}
