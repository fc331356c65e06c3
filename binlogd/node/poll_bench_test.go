package node

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"phxgo/binlogd/mysqld"
	"phxgo/binlogd/role"
)

// replicatingPair starts a MariaDB replicating from another, as a
// replica node's MariaDB does, and returns the replica's root handle.
func replicatingPair(tb testing.TB) (replica *sql.DB, replicaPid int) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	up, upDB := mysqld.NewTestServer(tb, 1)
	rep, repDB := mysqld.NewTestServer(tb, 2)
	acc := mysqld.DefaultAccounts()
	if _, err := upDB.ExecContext(ctx, "SET GLOBAL read_only=OFF"); err != nil {
		tb.Fatal(err)
	}
	if err := role.BecomeReplica(ctx, repDB, role.Upstream{Addr: up.Addr(), User: acc.CaptureUser, Password: acc.CapturePassword}); err != nil {
		tb.Fatal(err)
	}
	return repDB, rep.Pid()
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
			r, err := readPoll(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			cur, flushed, running := r.lsnCurrent, r.lsnFlushed, r.slaveRunning
			if cur == 0 || flushed == 0 || flushed > cur {
				t.Fatalf("LSNs current %d flushed %d", cur, flushed)
			}
			if want, err := role.Applied(ctx, db); err != nil || r.applied != want {
				t.Fatalf("applied %v, role.Applied %v %v", r.applied, want, err)
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

// BenchmarkPollRound compares one poll's queries against a replicating
// MariaDB: before, three round trips with SHOW SLAVE STATUS every time;
// after, one (multi-statement), with SHOW SLAVE STATUS once per replStatusEvery (every
// tenth poll at pollEvery). It alternates turns of both, so machine load
// falls on both alike, and reports CPU per poll of this process (the
// binlogd side) and of mariadbd, in microseconds.
func BenchmarkPollRound(b *testing.B) {
	db, pid := replicatingPair(b)
	ctx := context.Background()
	per := int(replStatusEvery / pollEvery)
	before := func(int) {
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
	after := func(i int) {
		if _, err := readPoll(ctx, db); err != nil {
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
	const turn = 100
	var self, server [2]time.Duration
	rounds := 0
	b.ResetTimer()
	for done := 0; done < b.N; done += turn {
		for k, f := range []func(int){before, after} {
			s0, m0 := selfCPU(b), procCPU(b, pid)
			for i := range turn {
				f(i)
			}
			self[k] += selfCPU(b) - s0
			server[k] += procCPU(b, pid) - m0
		}
		rounds += turn
	}
	us := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(rounds) }
	b.ReportMetric(us(self[0]), "before-binlogd-µs/poll")
	b.ReportMetric(us(self[1]), "after-binlogd-µs/poll")
	b.ReportMetric(us(server[0]), "before-mariadbd-µs/poll")
	b.ReportMetric(us(server[1]), "after-mariadbd-µs/poll")
}

func selfCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU is a process's user+system CPU from /proc (clock ticks of 10 ms).
func procCPU(tb testing.TB, pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}
