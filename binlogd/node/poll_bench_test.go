package node

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"phxgo/binlogd/mysqld"
	"phxgo/binlogd/role"
)

// replicatingPair starts a MariaDB replicating from another, as a
// replica node's MariaDB does, and returns the replica's root handle.
func replicatingPair(tb testing.TB) (replica, upstream *sql.DB) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	up := mysqld.NewTestInstance(tb, 1)
	rep := mysqld.NewTestInstance(tb, 2)
	acc := mysqld.DefaultAccounts()
	upDB, _ := up.DB("")
	repDB, _ := rep.DB("")
	tb.Cleanup(func() { upDB.Close(); repDB.Close() })
	for _, db := range []*sql.DB{upDB, repDB} {
		if err := mysqld.Bootstrap(ctx, db, acc); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := upDB.ExecContext(ctx, "SET GLOBAL read_only=OFF"); err != nil {
		tb.Fatal(err)
	}
	if err := role.BecomeReplica(ctx, repDB, role.Upstream{Addr: up.Addr(), User: acc.CaptureUser, Password: acc.CapturePassword}); err != nil {
		tb.Fatal(err)
	}
	return repDB, upDB
}

// The cheap status read of every poll sees both replication threads run
// (Slave_running) exactly when SHOW SLAVE STATUS does, so a thread that
// stops re-reads the full status at the next poll.
func TestPollStatusSeesReplicationRunning(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two MariaDB servers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db, _ := replicatingPair(t)
	await := func(want string, wantThreads bool) {
		t.Helper()
		for {
			cur, flushed, running, err := readPollStatus(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			if cur == 0 || flushed == 0 || flushed > cur {
				t.Fatalf("LSNs current %d flushed %d", cur, flushed)
			}
			st, err := role.ReplicaStatus(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			threads := st.IORunning == "Yes" && st.SQLRunning == "Yes"
			if running == want && threads == wantThreads {
				return
			}
			select {
			case <-ctx.Done():
				t.Fatalf("Slave_running %q (want %q), status %v", running, want, st)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	await("ON", true)
	if _, err := db.ExecContext(ctx, "STOP SLAVE SQL_THREAD"); err != nil {
		t.Fatal(err)
	}
	await("OFF", false)
}

// BenchmarkPollRound is one poll's queries against a replicating
// MariaDB: before, three round trips with SHOW SLAVE STATUS every time;
// after, two, with SHOW SLAVE STATUS once per replStatusEvery (every
// tenth poll at pollEvery). Compare CPU per op (run with -benchtime and
// read ns/op and allocs/op; the server's share is in another process).
func BenchmarkPollRound(b *testing.B) {
	db, _ := replicatingPair(b)
	ctx := context.Background()
	b.Run("before", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := role.Applied(ctx, db); err != nil {
				b.Fatal(err)
			}
			if _, _, err := readLSNs(ctx, db); err != nil {
				b.Fatal(err)
			}
			st, err := role.ReplicaStatus(ctx, db)
			if err != nil {
				b.Fatal(err)
			}
			_ = st.String()
		}
	})
	b.Run("after", func(b *testing.B) {
		b.ReportAllocs()
		per := int(replStatusEvery / pollEvery)
		for i := range b.N {
			if _, err := role.Applied(ctx, db); err != nil {
				b.Fatal(err)
			}
			if _, _, _, err := readPollStatus(ctx, db); err != nil {
				b.Fatal(err)
			}
			if i%per == 0 {
				st, err := role.ReplicaStatus(ctx, db)
				if err != nil {
					b.Fatal(err)
				}
				_ = st.String()
			}
		}
	})
}
