package e2e

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"phxgo/binlogd/config"
	"phxgo/binlogd/localcluster"
)

// While commits overlap, the master's binlogd makes MariaDB's binlog
// groups wait for more transactions (binlog_commit_wait_count above 0,
// binlog_commit_wait_usec 1.5x the mean ACK time, within group_commit_wait);
// with one client left it
// turns the wait off again, and a replica's MariaDB never waits, not even
// with a count left set. Every row reaches every node.
func TestGroupCommitWaitFollowsLoad(t *testing.T) {
	c, master := localcluster.StartForTest(t, binDir, 3, 8*time.Second, false)
	db := appDBWith(t, c, master, "CREATE DATABASE e2e", "CREATE TABLE e2e.g (id BIGINT PRIMARY KEY, w INT)")
	defer db.Close()
	db.SetMaxOpenConns(16)
	root := rootDB(t, c, master)
	defer root.Close()

	var next atomic.Int64
	insert := func() error {
		_, err := db.Exec("INSERT INTO e2e.g VALUES (?, 1)", next.Add(1))
		return err
	}
	// load runs clients inserting until stop is called; stop returns the
	// first error.
	load := func(clients int) (stop func() error) {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var first atomic.Pointer[error]
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					if err := insert(); err != nil {
						first.CompareAndSwap(nil, &err)
						return
					}
				}
			}()
		}
		return func() error {
			cancel()
			wg.Wait()
			if p := first.Load(); p != nil {
				return *p
			}
			return nil
		}
	}
	waitCount := func(db *sql.DB, what string, ok func(count int) bool) (count, usec int) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			if err := db.QueryRow("SELECT @@GLOBAL.binlog_commit_wait_count, @@GLOBAL.binlog_commit_wait_usec").Scan(&count, &usec); err != nil {
				t.Fatal(err)
			}
			if ok(count) {
				return count, usec
			}
			if time.Now().After(deadline) {
				t.Fatalf("binlog_commit_wait_count is %d after 60 s, want %s", count, what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	stop := load(16)
	count, usec := waitCount(root, "above 0 under 16 clients", func(n int) bool { return n > 0 })
	if most := int(config.DefaultGroupCommitWait.Microseconds()); usec < 200 || usec > most {
		t.Errorf("binlog_commit_wait_usec = %d under load, want 1.5x the mean ACK time, 200 to %d (group_commit_wait's default)", usec, most)
	}
	t.Logf("16 clients: binlog_commit_wait_count=%d usec=%d", count, usec)
	for id := uint32(1); id <= 3; id++ {
		if id == master {
			continue
		}
		r := rootDB(t, c, id)
		var n int
		if err := r.QueryRow("SELECT @@GLOBAL.binlog_commit_wait_count").Scan(&n); err != nil {
			t.Fatal(err)
		}
		r.Close()
		if n != 0 {
			t.Errorf("replica %d: binlog_commit_wait_count = %d, want 0 (its SQL thread commits alone)", id, n)
		}
	}
	if err := stop(); err != nil {
		t.Fatalf("an insert under 16 clients failed: %v", err)
	}

	stop = load(1)
	waitCount(root, "0 with one client", func(n int) bool { return n == 0 })
	if err := stop(); err != nil {
		t.Fatalf("an insert by one client failed: %v", err)
	}

	// A count left on a replica (a master term whose binlogd died before
	// its tuner turned the wait off) makes its parallel workers wait for
	// nobody: the replica's binlogd turns it off when it next asserts
	// replication.
	var replica uint32
	for id := uint32(1); id <= 3 && replica == 0; id++ {
		if id != master {
			replica = id
		}
	}
	rep := rootDB(t, c, replica)
	defer rep.Close()
	mustExec(t, rep, "SET GLOBAL binlog_commit_wait_count=25, GLOBAL binlog_commit_wait_usec=2000")
	waitCount(rep, "0 on a replica after it was set by hand", func(n int) bool { return n == 0 })

	pos := awaitSameData(t, c, "e2e.g")
	var rows int64
	if err := db.QueryRow("SELECT COUNT(*) FROM e2e.g").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != next.Load() {
		t.Fatalf("%d rows, want the %d inserted", rows, next.Load())
	}
	t.Logf("%d rows identical on 3 nodes at %s", rows, pos)
}
