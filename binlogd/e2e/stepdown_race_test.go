package e2e

import (
	"context"
	"database/sql"
	"sync"
	"syscall"
	"testing"
	"time"

	"phxgo/binlogd/localcluster"
)

// The step-down race (binlogd/rolectl/doc.go): a master loses its lease
// while commits wait for ACKs and more commits are between their read_only
// check and the semi-sync wait. Transactions whose statements ran before
// the fault commit while both other binlogds are stopped, spread over the
// moment the master's own lease view expires and it steps down (read_only
// then times out behind the waiting commits, so some pass their check and
// are not counted). The master must not return OK for any of them unless
// the log holds it: after the others resume, every acknowledged insert (the
// writers' and the held transactions') is on every node, and all nodes hold
// the same rows (the old master's binlog was cut to the log, never a fork).
//
// It is a targeted stress test, not a deterministic reproduction (that is
// binlogd/role/quiet_test.go, on one server): without the fix it fails
// only when a count lands on zero while a commit is in the window. A
// scenario of TestFailover.
func stepDownRaceNoAckedLoss(t *testing.T, c *localcluster.Cluster, master uint32, w *writers) {
	const held = 12
	type heldTx struct {
		id int
		db *sql.DB
		tx *sql.Tx
	}
	var txs []heldTx
	for i := range held {
		db := appDB(t, c, master)
		t.Cleanup(func() { db.Close() })
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		id := 1_000_000 + i
		if _, err := tx.Exec("INSERT INTO e2e.w VALUES (?, ?)", id, master); err != nil {
			t.Fatal(err)
		}
		txs = append(txs, heldTx{id, db, tx})
	}
	oldPid := c.Pid(master, "mariadbd")

	var others []uint32
	for _, id := range c.IDs() {
		if id != master {
			others = append(others, id)
		}
	}
	resume := func() {
		for _, id := range others {
			_ = c.Signal(id, "binlogd", syscall.SIGCONT)
		}
	}
	t.Cleanup(resume)
	fault := time.Now()
	for _, id := range others {
		if err := c.Signal(id, "binlogd", syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}

	// Commit the held transactions one by one across the lease's end and
	// the step-down that follows (read_only waits up to 2s, then capture
	// stops and the server is checked).
	var mu sync.Mutex
	okHeld := map[int]bool{}
	var wg sync.WaitGroup
	step := 2 * failoverLease / held
	for i, h := range txs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * step)
			if err := h.tx.Commit(); err == nil {
				mu.Lock()
				okHeld[h.id] = true
				mu.Unlock()
			}
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The master steps down on its own clock (it cannot renew).
	for {
		st, err := c.Status(ctx, master)
		if err == nil && !st.Ready {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("master %d never stepped down: %v %v", master, st, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(2 * failoverLease) // let the step-down's checks (and any kill) finish before the others vote again
	resume()
	wg.Wait()

	mu.Lock()
	w.mu.Lock()
	for id := range okHeld {
		w.acked[id] = time.Now() // acknowledged: must be everywhere
	}
	w.mu.Unlock()
	newPid := c.Pid(master, "mariadbd")
	t.Logf("held transactions acknowledged: %d of %d; old master's mariadbd pid %d -> %d", len(okHeld), held, oldPid, newPid)
	mu.Unlock()
	// Commits waited for ACKs at the step-down (the writers'), so the
	// server could not be proven quiet: it must have been killed (and is
	// recovering or restarted), never released.
	if newPid == oldPid {
		t.Fatalf("the old master's mariadbd (pid %d) was not killed at the step-down", oldPid)
	}
	finish(t, c, w, fault, "step-down race")
}
