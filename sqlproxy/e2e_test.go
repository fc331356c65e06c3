package sqlproxy

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"phxgo/binlogd/localcluster"
	pb "phxgo/proto"
	"phxgo/sqlproxy/topology"
)

const e2eLease = 3 * time.Second

// TestE2ECluster runs the proxy as it is deployed: three real nodes, each
// with binlogd, MariaDB and sqlproxy (package localcluster). Clients
// connect to every node's proxy. Skipped with -short.
//
//  1. DDL and DML through any node's proxy run on the master.
//  2. topology.Admin against each real binlogd yields the view the proxy
//     routes by (master, lease, forwarding address, replicas).
//  3. Master change under load: the master's binlogd is SIGSTOPped for
//     two lease durations while clients read and write through all three
//     proxies, each statement recording @@server_id and the server's
//     clock. Then: no statement ran on the old master after its lease
//     could have ended (SIGSTOP time + lease), every acknowledged write
//     is on the new master with the server id it reported, idle client
//     connections move to the new master without an error, and a
//     connection inside a transaction gets 1290/40001 and its rows are
//     gone.
func TestE2ECluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real cluster; skipped in -short")
	}
	bin := t.TempDir()
	if err := localcluster.BuildBinaries(bin); err != nil {
		t.Fatal(err)
	}
	c, master := localcluster.StartForTest(t, bin, 3, e2eLease, true)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	ids := []uint32{1, 2, 3}
	dbs := map[uint32]*sql.DB{}
	for _, id := range ids {
		db, err := c.AppDB(c.ProxyAddr(id))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dbs[id] = db
		// A proxy learns the master from its binlogd within a poll.
		await(t, ctx, fmt.Sprintf("proxy %d serving the master", id), func() bool {
			var sid uint32
			return db.QueryRowContext(ctx, "SELECT @@server_id").Scan(&sid) == nil && sid == master
		})
	}

	t.Run("ddl_dml_any_node", func(t *testing.T) {
		mustExec(t, dbs[other(master, 0)], "CREATE DATABASE e2e")
		for _, id := range ids {
			db := dbs[id]
			mustExec(t, db, fmt.Sprintf("CREATE TABLE e2e.n%d (k INT PRIMARY KEY, sid INT)", id))
			mustExec(t, db, fmt.Sprintf("INSERT INTO e2e.n%d VALUES (1, @@server_id)", id))
			var sid uint32
			if err := db.QueryRowContext(ctx, fmt.Sprintf("SELECT sid FROM e2e.n%d WHERE k = 1", id)).Scan(&sid); err != nil || sid != master {
				t.Fatalf("through proxy %d: insert ran on %d (err %v), master is %d", id, sid, err, master)
			}
		}
		mustExec(t, dbs[master], "CREATE TABLE e2e.w (id BIGINT PRIMARY KEY, writer INT, sid INT, ts DECIMAL(17,6))")
	})

	admins := map[uint32]*topology.Admin{}
	actx, acancel := context.WithCancel(context.Background())
	defer acancel() // the admins keep polling for the next subtest
	t.Run("admin_view", func(t *testing.T) {
		for _, id := range ids {
			client, err := c.Admin(id)
			if err != nil {
				t.Fatal(err)
			}
			a := topology.NewAdmin(actx, client, 50*time.Millisecond, slog.Default())
			admins[id] = a
			<-a.Ready()
			if a.Self() != id {
				t.Fatalf("node %d says it is %d", id, a.Self())
			}
			await(t, ctx, fmt.Sprintf("node %d view of master %d", id, master), func() bool {
				v := a.View()
				if v.MasterID != master || v.MasterProxyAddr != c.ProxyAddr(master) || v.MasterMySQLAddr != c.MySQLAddr(master) || len(v.Replicas) != 2 {
					return false
				}
				if id == master {
					return v.IsMaster && v.LeaseValid(time.Now()) && v.LeaseDeadline.Before(time.Now().Add(e2eLease))
				}
				return !v.IsMaster && !v.LeaseValid(time.Now())
			})
		}
	})

	t.Run("master_change_under_load", func(t *testing.T) {
		// Idle connections, one per proxy, and two open transactions:
		// one forwarded by a non-master proxy, one on the master's proxy.
		idle := map[uint32]*sql.Conn{}
		for _, id := range ids {
			conn, err := dbs[id].Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if sid := connServerID(t, ctx, conn); sid != master {
				t.Fatalf("idle conn via %d on %d", id, sid)
			}
			idle[id] = conn
		}
		txs := map[uint32]*sql.Tx{}
		for i, id := range []uint32{other(master, 0), master} {
			tx, err := dbs[id].BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			if _, err := tx.ExecContext(ctx, "INSERT INTO e2e.w VALUES (?, 0, @@server_id, UNIX_TIMESTAMP(NOW(6)))", -1-i); err != nil {
				t.Fatal(err)
			}
			txs[id] = tx
		}

		load := startLoad(dbs)
		defer load.stop()
		load.await(t, ctx, 30)
		stopped := time.Now()
		if err := c.Signal(master, "binlogd", syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		resumed := false
		defer func() {
			if !resumed {
				c.Signal(master, "binlogd", syscall.SIGCONT)
			}
		}()
		var newMaster uint32
		await(t, ctx, "a new master", func() bool {
			for _, id := range ids {
				if id == master {
					continue
				}
				if st, err := c.Status(ctx, id); err == nil && st.Role == pb.Role_ROLE_MASTER && st.Ready {
					newMaster = id
					return true
				}
			}
			return false
		})
		for time.Since(stopped) < 2*e2eLease {
			time.Sleep(20 * time.Millisecond)
		}
		if err := c.Signal(master, "binlogd", syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		resumed = true
		t.Logf("master %d paused at %s for %v; new master %d", master, stopped.Format("15:04:05.000"), time.Since(stopped).Round(time.Millisecond), newMaster)
		// Every node's binlogd, the resumed one too, tells its proxy
		// about the new master (the old node's MariaDB may still be
		// recovering: its proxy forwards all the same).
		for _, id := range ids {
			await(t, ctx, fmt.Sprintf("node %d admin view of master %d", id, newMaster), func() bool {
				return admins[id].View().MasterID == newMaster
			})
		}
		n := load.acked()
		load.await(t, ctx, n+30) // writes flow again through every proxy
		load.stop()

		// (a) Nothing ran on the old master after its lease could have
		// ended: its last renewal started before the SIGSTOP.
		limit := float64(stopped.Add(e2eLease).UnixMicro()) / 1e6
		onOld, after, late := 0, 0, 0
		for _, r := range load.results() {
			if r.sid == master {
				onOld++
				if r.ts >= limit {
					if late++; late <= 5 {
						t.Errorf("%s ran on the old master %d at %.6f, after its lease ended (<= %.6f)", r.what, master, r.ts, limit)
					}
				}
			} else if r.sid == newMaster {
				after++
			}
		}
		t.Logf("%d statements on the old master (before the pause), %d on the new one; %d writes acknowledged, %d errors",
			onOld, after, load.acked(), load.failed())
		if late > 0 {
			t.Errorf("%d statements ran on the old master after its lease", late)
		}
		if after == 0 {
			t.Fatal("no statement ran on the new master")
		}

		// (b) Every acknowledged write is on the new master, as reported.
		got := map[int64]uint32{}
		rows, err := dbs[newMaster].QueryContext(ctx, "SELECT id, sid FROM e2e.w")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id int64
			var sid uint32
			if err := rows.Scan(&id, &sid); err != nil {
				t.Fatal(err)
			}
			got[id] = sid
		}
		rows.Close()
		for id, sid := range load.ackedWrites() {
			if g, ok := got[id]; !ok || g != sid {
				t.Errorf("acknowledged write %d (ran on %d) is missing or differs: %v %v", id, sid, g, ok)
			}
		}
		for _, id := range []int64{-1, -2} {
			if _, ok := got[id]; ok {
				t.Errorf("row %d of a transaction interrupted by the master change was committed", id)
			}
		}

		// (c) Idle connections move on their next statement.
		for _, id := range ids {
			if sid := connServerID(t, ctx, idle[id]); sid != newMaster {
				t.Errorf("idle conn via proxy %d now on %d, want %d", id, sid, newMaster)
			}
		}

		// (d) A transaction across the change fails; ROLLBACK clears it.
		for id, tx := range txs {
			_, err := tx.ExecContext(ctx, "INSERT INTO e2e.w VALUES (-10, 0, 0, 0)")
			var me *mysql.MySQLError
			if !errors.As(err, &me) || me.Number != 1290 || string(me.SQLState[:]) != "40001" {
				t.Errorf("transaction via proxy %d across the master change: want 1290/40001, got %v", id, err)
			}
			if err := tx.Rollback(); err != nil {
				t.Errorf("rollback via proxy %d: %v", id, err)
			}
		}
	})
}

func mustExec(t *testing.T, db *sql.DB, q string) {
	t.Helper()
	if _, err := db.ExecContext(context.Background(), q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// other returns the i-th node id (0 or 1) that is not id.
func other(id uint32, i int) uint32 {
	var out []uint32
	for n := uint32(1); n <= 3; n++ {
		if n != id {
			out = append(out, n)
		}
	}
	return out[i]
}

func connServerID(t *testing.T, ctx context.Context, conn *sql.Conn) uint32 {
	t.Helper()
	var sid uint32
	if err := conn.QueryRowContext(ctx, "SELECT @@server_id").Scan(&sid); err != nil {
		t.Fatalf("SELECT @@server_id: %v", err)
	}
	return sid
}

// load reads and writes through every proxy; each statement records
// the server id and server clock it ran with.
type load struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	res    []result
	writes map[int64]uint32 // acknowledged write id -> server id
	errs   int
	nextID int64
}

type result struct {
	what string
	sid  uint32
	ts   float64 // UNIX_TIMESTAMP(NOW(6)) on the server
}

func startLoad(dbs map[uint32]*sql.DB) *load {
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{cancel: cancel, writes: map[int64]uint32{}}
	for id, db := range dbs {
		for _, write := range []bool{true, false} {
			l.wg.Add(1)
			go func() {
				defer l.wg.Done()
				l.loop(ctx, id, db, write)
			}()
		}
	}
	return l
}

func (l *load) loop(ctx context.Context, via uint32, db *sql.DB, write bool) {
	for ctx.Err() == nil {
		octx, cancel := context.WithTimeout(ctx, 10*time.Second)
		var r result
		var err error
		if write {
			l.mu.Lock()
			l.nextID++
			id := l.nextID
			l.mu.Unlock()
			r.what = fmt.Sprintf("write %d via proxy %d", id, via)
			_, err = db.ExecContext(octx, "INSERT INTO e2e.w VALUES (?, ?, @@server_id, UNIX_TIMESTAMP(NOW(6)))", id, via)
			if err == nil {
				err = db.QueryRowContext(octx, "SELECT sid, ts FROM e2e.w WHERE id = ?", id).Scan(&r.sid, &r.ts)
				if err == nil {
					l.mu.Lock()
					l.writes[id] = r.sid
					l.mu.Unlock()
				}
			}
		} else {
			r.what = fmt.Sprintf("read via proxy %d", via)
			var ts string
			err = db.QueryRowContext(octx, "SELECT @@server_id, UNIX_TIMESTAMP(NOW(6))").Scan(&r.sid, &ts)
			if err == nil {
				r.ts, err = strconv.ParseFloat(ts, 64)
			}
		}
		cancel()
		l.mu.Lock()
		if err != nil {
			l.errs++
		} else {
			l.res = append(l.res, r)
		}
		l.mu.Unlock()
		if err != nil {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func (l *load) stop() { l.cancel(); l.wg.Wait() }

func (l *load) acked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.writes)
}

func (l *load) failed() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.errs
}

func (l *load) results() []result {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]result(nil), l.res...)
}

func (l *load) ackedWrites() map[int64]uint32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := make(map[int64]uint32, len(l.writes))
	for k, v := range l.writes {
		m[k] = v
	}
	return m
}

// await waits until at least n writes are acknowledged.
func (l *load) await(t *testing.T, ctx context.Context, n int) {
	t.Helper()
	actx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	await(t, actx, fmt.Sprintf("%d acknowledged writes", n), func() bool { return l.acked() >= n })
}
