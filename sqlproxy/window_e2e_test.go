package sqlproxy

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"phxgo/binlogd/localcluster"
	pb "phxgo/proto"
)

// TestE2EOneHopWindow: a real three-node cluster (binlogd, MariaDB,
// sqlproxy per node, each on its own loopback address). MariaDB's
// processlist shows which way a statement came (oneHopFrom). Skipped
// with -short.
//
//  1. A non-master proxy holding a read window sends straight to the
//     master's MariaDB: the session there is a TCP one naming the client
//     (PROXY header), not the master's proxy's (socket, localhost).
//  2. Its binlogd paused, the proxy cannot renew the window: it falls
//     back to forwarding through the master's proxy, and returns to one
//     hop once binlogd resumes.
//  3. The master's binlogd paused, then (on the next master) killed,
//     while a writer increments a register through a third proxy and a
//     reader reads it through the non-master proxy: no read returns less
//     than a value acknowledged before the read began (no stale read),
//     nothing sent one hop by the reader ran on the failed master later
//     than a window (d/5) plus slack after the failure (a read it
//     forwarded, later than a lease: the master's proxy judges that),
//     and the reader goes one hop to the new master.
func TestE2EOneHopWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real cluster; skipped in -short")
	}
	bin := t.TempDir()
	if err := localcluster.BuildBinaries(bin); err != nil {
		t.Fatal(err)
	}
	hosts := []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"}
	c, master := localcluster.StartSpecForTest(t, localcluster.Spec{BinDir: bin, Nodes: 3, LeaseDuration: e2eLease,
		Proxy: true, Hosts: hosts})
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	dbs := map[uint32]*sql.DB{}
	for id := uint32(1); id <= 3; id++ {
		db, err := c.AppDB(c.ProxyAddr(id))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dbs[id] = db
	}
	// where says on which server a statement through db ran and from
	// which address its MariaDB session came.
	where := func(db *sql.DB) (sid uint32, from string, err error) {
		err = db.QueryRowContext(ctx, "SELECT @@server_id, SUBSTRING_INDEX(HOST, ':', 1) FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()").Scan(&sid, &from)
		return sid, from, err
	}
	oneHop := func(via, to uint32) {
		t.Helper()
		await(t, ctx, fmt.Sprintf("proxy %d one hop to master %d", via, to), func() bool {
			sid, from, err := where(dbs[via])
			return err == nil && sid == to && oneHopFrom(from)
		})
	}
	mustExec(t, dbs[master], "CREATE DATABASE test_onehop")
	mustExec(t, dbs[master], "CREATE TABLE test_onehop.r (k INT PRIMARY KEY, v BIGINT)")
	mustExec(t, dbs[master], "INSERT INTO test_onehop.r VALUES (1, 0)")

	reader := other(master, 0)
	t.Run("one_hop_and_fallback", func(t *testing.T) {
		oneHop(reader, master)
		oneHop(other(master, 1), master)
		if err := c.Signal(reader, "binlogd", syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		resumed := false
		defer func() {
			if !resumed {
				_ = c.Signal(reader, "binlogd", syscall.SIGCONT)
			}
		}()
		await(t, ctx, fmt.Sprintf("proxy %d forwarding through the master's proxy", reader), func() bool {
			sid, from, err := where(dbs[reader])
			return err == nil && sid == master && !oneHopFrom(from)
		})
		if err := c.Signal(reader, "binlogd", syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		resumed = true
		oneHop(reader, master)
	})

	for _, failure := range []string{"pause", "kill"} {
		t.Run("no_stale_read_"+failure, func(t *testing.T) {
			if st, err := c.Status(ctx, reader); err == nil && st.MasterId == reader {
				reader = other(reader, 0) // the reader must not be the master
			}
			writer := other(master, 0)
			if writer == reader {
				writer = other(master, 1)
			}
			oneHop(reader, master)
			reg := startRegister(dbs[writer], dbs[reader])
			defer reg.stop()
			reg.awaitWrites(t, ctx, 20)
			failed := time.Now()
			if failure == "pause" {
				if err := c.Signal(master, "binlogd", syscall.SIGSTOP); err != nil {
					t.Fatal(err)
				}
				defer c.Signal(master, "binlogd", syscall.SIGCONT)
			} else if err := c.Kill(ctx, master, "binlogd"); err != nil {
				t.Fatal(err)
			}
			var next uint32
			await(t, ctx, "a new master", func() bool {
				for _, id := range []uint32{reader, writer} {
					if st, err := c.Status(ctx, id); err == nil && st.Role == pb.Role_ROLE_MASTER && st.Ready {
						next = id
						return true
					}
				}
				return false
			})
			reg.awaitWrites(t, ctx, reg.writes()+20)
			reg.stop()
			if failure == "pause" {
				if err := c.Signal(master, "binlogd", syscall.SIGCONT); err != nil {
					t.Fatal(err)
				}
			}
			// A window is usable at most d/5 past its grant
			// (binlogd/node/windows.go); a forwarded read at most a lease
			// (the master's proxy judges its own lease). The rest is slack
			// for a statement sent just before the end.
			slack := e2eLease / 4
			direct := float64(failed.Add(e2eLease/5+slack).UnixMicro()) / 1e6
			any := float64(failed.Add(e2eLease+slack).UnixMicro()) / 1e6
			stale, late, reads := reg.check(master, direct, any)
			t.Logf("%s of master %d: new master %d; %d reads via proxy %d, %d writes via proxy %d", failure, master, next, reads, reader, reg.writes(), writer)
			for _, s := range stale {
				t.Error("stale read:", s)
			}
			for _, s := range late {
				t.Error("read on the failed master after its windows:", s)
			}
			if reads == 0 {
				t.Fatal("no read succeeded")
			}
			if next != reader {
				oneHop(reader, next)
			}
			master = next
		})
	}
	if t.Failed() {
		return
	}
	// The killed binlogd's node stays down; the cluster stops at cleanup.
}

// register sets one row to ever larger values through a writer and reads it through a
// reader. A read must return at least the value of every write
// acknowledged before the read was sent.
type register struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	acked  atomic.Int64 // highest value acknowledged
	nw     atomic.Int64

	mu    sync.Mutex
	reads []regRead
}

// oneHopFrom: a MariaDB session whose host is from came one hop from a
// non-master proxy. Such a proxy reaches the master's MariaDB by TCP with
// a PROXY header naming the client (proxyproto.go), so MariaDB shows the
// client's address; the master's own proxy (a forwarded statement) uses
// its unix socket for the app account (user@'%' is localhost's row too),
// which shows as localhost.
func oneHopFrom(from string) bool { return from != "" && from != "localhost" }

type regRead struct {
	floor, got int64
	sid        uint32
	ts         float64
	from       string // the host MariaDB saw: the client's address on one hop (oneHopFrom)
}

func startRegister(w, r *sql.DB) *register {
	ctx, cancel := context.WithCancel(context.Background())
	g := &register{cancel: cancel}
	g.wg.Add(2)
	go func() {
		defer g.wg.Done()
		// One writer sets ever larger values with autocommit statements
		// (a COMMIT stuck on a paused master would not heed its context).
		for v := int64(1); ctx.Err() == nil; v++ {
			octx, c := context.WithTimeout(ctx, 5*time.Second)
			_, err := w.ExecContext(octx, "UPDATE test_onehop.r SET v = ? WHERE k = 1", v)
			c()
			if err != nil {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			g.acked.Store(v)
			g.nw.Add(1)
		}
	}()
	go func() {
		defer g.wg.Done()
		for ctx.Err() == nil {
			floor := g.acked.Load()
			octx, c := context.WithTimeout(ctx, 5*time.Second)
			var rd regRead
			var ts string
			err := r.QueryRowContext(octx, "SELECT v, @@server_id, UNIX_TIMESTAMP(NOW(6)), "+
				"(SELECT SUBSTRING_INDEX(HOST, ':', 1) FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()) "+
				"FROM test_onehop.r WHERE k = 1").Scan(&rd.got, &rd.sid, &ts, &rd.from)
			c()
			if err != nil {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			rd.floor = floor
			rd.ts, _ = strconv.ParseFloat(ts, 64)
			g.mu.Lock()
			g.reads = append(g.reads, rd)
			g.mu.Unlock()
		}
	}()
	return g
}

func (g *register) stop()       { g.cancel(); g.wg.Wait() }
func (g *register) writes() int { return int(g.nw.Load()) }
func (g *register) awaitWrites(t *testing.T, ctx context.Context, n int) {
	t.Helper()
	actx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	await(t, actx, fmt.Sprintf("%d acknowledged writes", n), func() bool { return g.writes() >= n })
}

// check returns the stale reads, the reads that ran on failed after
// their limit (server time: direct from the reader's proxy, or
// forwarded), and the number of reads.
func (g *register) check(failed uint32, direct, forwarded float64) (stale, late []string, n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range g.reads {
		if r.got < r.floor && len(stale) < 5 {
			stale = append(stale, fmt.Sprintf("read %d on server %d at %.6f after %d was acknowledged", r.got, r.sid, r.ts, r.floor))
		}
		limit := forwarded
		if oneHopFrom(r.from) {
			limit = direct
		}
		if r.sid == failed && r.ts > limit && len(late) < 5 {
			late = append(late, fmt.Sprintf("read %d on server %d from %s at %.6f (limit %.6f)", r.got, r.sid, r.from, r.ts, limit))
		}
	}
	return stale, late, len(g.reads)
}
