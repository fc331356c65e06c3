package e2e

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"phxgo/binlogd/localcluster"
	pb "phxgo/proto"
)

// durability is one sample of a MariaDB's write and fsync settings.
type durability struct {
	readOnly, syncBinlog, flushAtCommit, applyThreads int
}

func readDurability(ctx context.Context, db *sql.DB) (durability, error) {
	var d durability
	err := db.QueryRowContext(ctx, "SELECT @@read_only, @@sync_binlog, @@innodb_flush_log_at_trx_commit, @@slave_parallel_threads").
		Scan(&d.readOnly, &d.syncBinlog, &d.flushAtCommit, &d.applyThreads)
	return d, err
}

func (d durability) relaxed() bool { return d.syncBinlog == 0 && d.flushAtCommit == 2 }
func (d durability) durable() bool { return d.syncBinlog == 1 && d.flushAtCommit == 1 }

// awaitDurability waits until node id's MariaDB satisfies ok.
func awaitDurability(t *testing.T, c *localcluster.Cluster, id uint32, what string, ok func(durability) bool) durability {
	t.Helper()
	db := rootDB(t, c, id)
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		d, err := readDurability(ctx, db)
		if err == nil && ok(d) {
			return d
		}
		if ctx.Err() != nil {
			t.Fatalf("node %d never %s: %+v %v", id, what, d, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Replicas run relaxed and apply in parallel; the master is durable. A
// replica whose mariadbd is killed re-syncs from the log; a switchover to
// it makes it durable before read_only goes off (sampled all along), the
// demoted master becomes relaxed, and no acknowledged write is lost or
// doubled. A scenario of TestFailover.
func relaxedReplicasPromoteDurable(t *testing.T, c *localcluster.Cluster, master uint32, w *writers) {
	var replicas []uint32
	for _, id := range c.IDs() {
		if id != master {
			replicas = append(replicas, id)
		}
	}
	for _, id := range replicas {
		d := awaitDurability(t, c, id, "relaxed", durability.relaxed)
		if d.readOnly != 1 || d.applyThreads < 2 {
			t.Fatalf("replica %d: %+v, want read_only and parallel apply", id, d)
		}
	}
	awaitDurability(t, c, master, "durable and writable", func(d durability) bool { return d.durable() && d.readOnly == 0 })

	// A replica host crash, as near as a test gets: SIGKILL its mariadbd
	// under load. It comes back, re-fetches from the log, relaxes again.
	to := replicas[0]
	if err := c.Kill(context.Background(), to, "mariadbd"); err != nil {
		t.Fatal(err)
	}
	w.awaitAcks(t, 50, time.Minute)
	awaitDurability(t, c, to, "relaxed again after its restart", durability.relaxed)

	// Sample the target's settings while it is promoted: writable must
	// never be seen with relaxed settings.
	sdb := rootDB(t, c, to)
	defer sdb.Close()
	var bad atomic.Pointer[durability]
	var samples atomic.Int64
	sctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for sctx.Err() == nil {
			d, err := readDurability(sctx, sdb)
			if err != nil {
				continue
			}
			samples.Add(1)
			if d.readOnly == 0 && !d.durable() {
				bad.Store(&d)
			}
		}
	}()

	// The target must be caught up for a switchover; writes keep going.
	admin, err := c.Admin(master)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	for {
		r, err := admin.Switchover(ctx, &pb.SwitchoverRequest{To: to})
		if err == nil && r.MasterId == to {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("switchover to %d: %v", to, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	awaitDurability(t, c, to, "writable", func(d durability) bool { return d.readOnly == 0 && d.durable() })
	t.Logf("switchover %d -> %d: writable after %.2fs", master, to, time.Since(start).Seconds())
	awaitDurability(t, c, master, "relaxed after its demotion", func(d durability) bool { return d.relaxed() && d.readOnly == 1 })
	stop()
	wg.Wait()
	if d := bad.Load(); d != nil {
		t.Fatalf("node %d writable while relaxed: %+v", to, *d)
	}
	t.Logf("%d samples of node %d's settings during the switchover", samples.Load(), to)

	finish(t, c, w, start, "relaxed replica crash + switchover")
	// Once idle, every member's synced position reaches what it applied.
	for _, id := range c.IDs() {
		for {
			st, err := c.Status(ctx, id)
			if err == nil && st.MysqlDurableGtidPos == st.MysqlGtidPos && st.MysqlGtidPos != "" {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("node %d: synced position never reached the applied one: %v %v", id, st, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
