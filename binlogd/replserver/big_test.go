package replserver

import (
	"flag"
	"fmt"
	"testing"
	"time"
)

var big50 = flag.Bool("replserver.big50", false, "also run the 50 MB transaction variant")

// TestBigTransaction: one transaction of >= 20 MB whose first row event
// alone exceeds a 16 MB protocol packet, so the endpoint must split it.
func TestBigTransaction(t *testing.T) {
	if testing.Short() {
		t.Skip("big transaction: skipped in -short")
	}
	sizes := []int{20}
	if *big50 {
		sizes = append(sizes, 50)
	}
	m := newMaster(t)
	m.exec(t, "CREATE DATABASE app", "CREATE TABLE app.big (id INT PRIMARY KEY, b LONGBLOB)")
	m.sync(t)
	srv, r := followingReplica(t, m)
	id := 0
	for _, mb := range sizes {
		conn, err := m.db.Conn(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		stmts := []string{"BEGIN"}
		for left := mb; left > 0; left -= 17 {
			id++
			n := min(left, 17)
			stmts = append(stmts, fmt.Sprintf("INSERT INTO app.big VALUES (%d, REPEAT(CHAR(64 + %d), %d))", id, id, n*1024*1024))
		}
		stmts = append(stmts, "COMMIT")
		for _, s := range stmts {
			if _, err := conn.ExecContext(ctxT(t), s); err != nil {
				t.Fatal(err)
			}
		}
		conn.Close()
		before := srv.Stats().Bytes
		m.sync(t)
		start := time.Now()
		r.waitCaughtUp(t, m.gtidBinlogPos(t), 3*time.Minute)
		t.Logf("%d MB transaction: %d event bytes sent, replica caught up in %v", mb, srv.Stats().Bytes-before, time.Since(start))
		sameTables(t, m, r, "app.big")
	}
}
