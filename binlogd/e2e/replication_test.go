package e2e

import (
	"context"
	"database/sql"
	"sync"
	"syscall"
	"testing"
	"time"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/localcluster"
)

// Rows written on the master reach both replicas through the Paxos log
// with identical contents; an acknowledged commit is already valid in the
// master's log (hence chosen by a majority) when COMMIT returns; with both
// other binlogds stopped a commit blocks, and completes when they return.
func TestWritePathThroughPaxos(t *testing.T) {
	c, master := localcluster.StartForTest(t, binDir, 3, 8*time.Second, false)
	db := appDBWith(t, c, master, "CREATE DATABASE e2e", "CREATE TABLE e2e.t (id INT PRIMARY KEY, v VARCHAR(64), n BIGINT)")
	defer db.Close()

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if _, err := db.Exec("INSERT INTO e2e.t VALUES (?, ?, ?)", w*1000+i, "row", i*w); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// An acknowledged commit is valid in the master's log at once.
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "UPDATE e2e.t SET n=n+1 WHERE id=1"); err != nil {
		t.Fatal(err)
	}
	var lastS string
	if err := conn.QueryRowContext(ctx, "SELECT @@last_gtid").Scan(&lastS); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	last, _ := binlog.ParseGTID(lastS)
	st, err := c.Status(ctx, master)
	if err != nil {
		t.Fatal(err)
	}
	valid, _ := binlog.ParseGTID(st.LastValidGtid)
	if valid.Seq < last.Seq {
		t.Fatalf("commit %s acknowledged but the master's log is valid only up to %s", last, valid)
	}

	pos := awaitSameData(t, c, "e2e.t")
	t.Logf("3 nodes identical at %s", pos)
	checkWriteMetrics(t, c, master, 401)

	root := rootDB(t, c, master)
	defer root.Close()
	// Logged only on failure (or -v): the baseline to compare with. Taken
	// before the SIGSTOPs, which the INSERT follows at once, as before.
	t.Log("diag: before the SIGSTOPs")
	logCommitDiag(t, c, root, master)

	// Stop both other binlogds: no majority, so no ACK.
	var others []uint32
	for id := uint32(1); id <= 3; id++ {
		if id != master {
			others = append(others, id)
			if err := c.Signal(id, "binlogd", syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			// On a failure, before the cluster stops: a stopped binlogd
			// would wait out Stop's SIGTERM until its SIGKILL.
			t.Cleanup(func() { _ = c.Signal(id, "binlogd", syscall.SIGCONT) })
		}
	}
	for _, id := range others {
		awaitStopped(t, c.Pid(id, "binlogd"))
	}
	stopped := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := db.Exec("INSERT INTO e2e.t VALUES (999999, 'blocked', 0)")
		done <- err
	}()
	// Await the commit waiting for its ACK; it must not return meanwhile.
	awaitWaiting(t, root, done, func() {
		t.Logf("diag: %v after the SIGSTOPs", time.Since(stopped))
		logCommitDiag(t, c, root, master)
	})
	var n int
	if err := root.QueryRow("SELECT COUNT(*) FROM e2e.t WHERE id=999999").Scan(&n); err != nil || n != 0 {
		t.Fatalf("unacknowledged row visible: n=%d err=%v", n, err)
	}
	for _, id := range others {
		if err := c.Signal(id, "binlogd", syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("commit after the majority returned: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("commit still blocked a minute after the majority returned")
	}
	awaitSameData(t, c, "e2e.t")
}

// awaitWaiting waits until a commit waits for its semi-sync ACK, failing if
// the commit returns first; diag (may be nil) logs the state first.
func awaitWaiting(t *testing.T, root *sql.DB, done <-chan error, diag func()) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		var name string
		var w int
		if err := root.QueryRow("SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_master_wait_sessions'").Scan(&name, &w); err != nil {
			t.Fatal(err)
		}
		if w > 0 {
			return
		}
		select {
		case err := <-done:
			if diag != nil {
				diag()
			}
			t.Fatalf("commit returned (%v) with no majority", err)
		case <-deadline:
			if diag != nil {
				diag()
			}
			t.Fatal("commit never waited for an ACK")
		case <-time.After(20 * time.Millisecond):
		}
	}
}
