package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	"phxgo/binlogd/localcluster"
)

// writers insert unique rows into e2e.w on whichever node is master,
// recording which inserts were acknowledged and when.
type writers struct {
	c      *localcluster.Cluster
	mu     sync.Mutex
	acked  map[int]time.Time
	failed int
	next   int
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func startWriters(t *testing.T, c *localcluster.Cluster, n int) *writers {
	t.Helper()
	w := &writers{c: c, acked: map[int]time.Time{}}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	for i := 0; i < n; i++ {
		w.wg.Add(1)
		go w.loop(ctx)
	}
	return w
}

func (w *writers) id() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.next++
	return w.next
}

func (w *writers) loop(ctx context.Context) {
	defer w.wg.Done()
	var db *sql.DB
	var master uint32
	defer func() {
		if db != nil {
			db.Close()
		}
	}()
	for ctx.Err() == nil {
		if db == nil {
			// Writes go to the master only; during failover wait for one.
			m := w.masterNow(ctx)
			if m == 0 {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			db, _ = w.c.AppDB(w.c.MySQLAddr(m))
			master = m
		}
		id := w.id()
		qctx, cancel := context.WithTimeout(ctx, failoverLease)
		_, err := db.ExecContext(qctx, "INSERT INTO e2e.w VALUES (?, ?)", id, master)
		cancel()
		w.mu.Lock()
		if err == nil {
			w.acked[id] = time.Now()
		} else {
			w.failed++
		}
		w.mu.Unlock()
		if err != nil {
			db.Close()
			db = nil
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// masterNow asks the nodes who the ready master is.
func (w *writers) masterNow(ctx context.Context) uint32 {
	for _, id := range w.c.IDs() {
		st, err := w.c.Status(ctx, id)
		if err == nil && st.Ready && st.MasterId == id {
			return id
		}
	}
	return 0
}

func (w *writers) stop() {
	w.cancel()
	w.wg.Wait()
}

// lastAckBefore / firstAckAfter bound an unavailability window.
func (w *writers) gap(after time.Time) (last, first time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, at := range w.acked {
		if at.Before(after) && at.After(last) {
			last = at
		}
		if at.After(after) && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	return last, first
}

func (w *writers) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

// awaitAcks waits until at least n more inserts are acknowledged.
func (w *writers) awaitAcks(t *testing.T, n int, within time.Duration) {
	t.Helper()
	want := w.count() + n
	deadline := time.Now().Add(within)
	for w.count() < want {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d acknowledged inserts within %v", w.count(), want, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkAcked verifies every acknowledged insert is on every node.
func (w *writers) checkAcked(t *testing.T) {
	t.Helper()
	w.checkAckedOn(t, w.c.IDs()...)
}

// checkAckedOn verifies every acknowledged insert is on each of the given
// nodes (a witness has no MariaDB to check).
func (w *writers) checkAckedOn(t *testing.T, nodes ...uint32) {
	t.Helper()
	w.mu.Lock()
	ids := make([]int, 0, len(w.acked))
	for id := range w.acked {
		ids = append(ids, id)
	}
	w.mu.Unlock()
	for _, id := range nodes {
		db := rootDB(t, w.c, id)
		have := map[int]bool{}
		rows, err := db.Query("SELECT id FROM e2e.w")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var x int
			if err := rows.Scan(&x); err != nil {
				t.Fatal(err)
			}
			have[x] = true
		}
		rows.Close()
		db.Close()
		lost := 0
		for _, x := range ids {
			if !have[x] {
				lost++
				if lost < 5 {
					t.Errorf("node %d lost acknowledged insert %d", id, x)
				}
			}
		}
		if lost > 0 {
			t.Fatalf("node %d lost %d of %d acknowledged inserts", id, lost, len(ids))
		}
		t.Logf("node %d holds all %d acknowledged inserts", id, len(ids))
	}
}

func (w *writers) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("%d acknowledged, %d failed/unknown", len(w.acked), w.failed)
}
