package replserver

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestReplicaFollowsLog: a real MariaDB 10.11 replica follows the endpoint
// through DDL, rows, live appends, STOP/START SLAVE, a kill -9 of the
// replica and a restart of the endpoint, ending with identical tables and
// gtid_slave_pos equal to the master's binlog position.
func TestReplicaFollowsLog(t *testing.T) {
	m := newMaster(t)
	m.exec(t,
		"CREATE DATABASE app",
		"CREATE TABLE app.t (id INT PRIMARY KEY, v VARCHAR(100), b BLOB) ENGINE=InnoDB",
		"INSERT INTO app.t VALUES (1, 'one', NULL), (2, 'two', x'00ff')",
	)
	m.sync(t)
	srv, r := followingReplica(t, m)
	sameTables(t, m, r, "app.t")

	// Live: the replica is waiting in the dump when new transactions arrive.
	m.exec(t, "UPDATE app.t SET v='uno' WHERE id=1", "DELETE FROM app.t WHERE id=2",
		"ALTER TABLE app.t ADD COLUMN c INT DEFAULT 7", "INSERT INTO app.t (id, v) VALUES (3, 'three')")
	m.sync(t)
	r.waitCaughtUp(t, m.gtidBinlogPos(t), time.Minute)
	sameTables(t, m, r, "app.t")

	// STOP SLAVE / START SLAVE resumes from gtid_slave_pos.
	r.exec(t, "STOP SLAVE")
	m.exec(t, "INSERT INTO app.t (id, v) VALUES (4, 'four')")
	m.sync(t)
	r.exec(t, "START SLAVE")
	r.waitCaughtUp(t, m.gtidBinlogPos(t), time.Minute)

	// kill -9 of the replica, restart, START SLAVE (instances skip-slave-start).
	if err := r.inst.Kill(); err != nil {
		t.Fatal(err)
	}
	m.exec(t, "INSERT INTO app.t (id, v) VALUES (5, 'five')")
	m.sync(t)
	if err := r.inst.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	r.exec(t, "START SLAVE")
	r.waitCaughtUp(t, m.gtidBinlogPos(t), time.Minute)
	sameTables(t, m, r, "app.t")

	// Endpoint restart on the same address: the replica reconnects by itself.
	addr := srv.Addr()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	m.exec(t, "INSERT INTO app.t (id, v) VALUES (6, 'six')")
	m.sync(t)
	srv2 := startEndpoint(t, m.src, addr, time.Second)
	r.waitCaughtUp(t, m.gtidBinlogPos(t), time.Minute)
	sameTables(t, m, r, "app.t")
	if st := r.status(t); st["Slave_IO_Running"] != "Yes" || st["Master_Server_Id"] != fmt.Sprint(endpointID) {
		t.Fatalf("replica status: IO %s, Master_Server_Id %s", st["Slave_IO_Running"], st["Master_Server_Id"])
	}
	if s := srv2.Stats(); s.Dumps < 1 || s.Refused != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// TestManySmallTransactions: 1,000 single-row commits, streamed while the
// replica is connected.
func TestManySmallTransactions(t *testing.T) {
	m := newMaster(t)
	m.exec(t, "CREATE DATABASE app", "CREATE TABLE app.s (id INT PRIMARY KEY, v INT)")
	m.sync(t)
	_, r := followingReplica(t, m)
	const n = 1000
	for i := 0; i < n; i++ {
		m.exec(t, fmt.Sprintf("INSERT INTO app.s VALUES (%d, %d)", i, i*i))
	}
	m.sync(t)
	start := time.Now()
	r.waitCaughtUp(t, m.gtidBinlogPos(t), 2*time.Minute)
	t.Logf("replica applied %d transactions in %v (%d txns in log)", n, time.Since(start), m.src.Len())
	sameTables(t, m, r, "app.s")
}

// TestHeartbeatKeepsIdleReplicaConnected: with nothing to send, heartbeats
// keep the replica's IO thread on one connection for longer than its
// slave_net_timeout.
func TestHeartbeatKeepsIdleReplicaConnected(t *testing.T) {
	m := newMaster(t)
	m.exec(t, "CREATE DATABASE app")
	m.sync(t)
	srv := startEndpoint(t, m.src, "127.0.0.1:0", 10*time.Second)
	r := newReplica(t, 2)
	r.exec(t, "SET GLOBAL slave_net_timeout=2")
	r.follow(t, srv.Addr(), 0.4) // the replica's period wins: it is shorter
	r.waitCaughtUp(t, m.gtidBinlogPos(t), time.Minute)
	// 12 heartbeats at 0.4 s is 4.8 s, more than twice slave_net_timeout.
	await(t, time.Minute, func() (bool, string) {
		hb := r.statusVar(t, "Slave_received_heartbeats")
		var n int
		fmt.Sscan(hb, &n)
		return n >= 12, "heartbeats " + hb
	})
	st := r.status(t)
	if st["Slave_IO_Running"] != "Yes" || st["Last_IO_Errno"] != "0" {
		t.Fatalf("IO thread %s, error %s %s", st["Slave_IO_Running"], st["Last_IO_Errno"], st["Last_IO_Error"])
	}
	if s := srv.Stats(); s.Dumps != 1 || s.Heartbeats < 12 {
		t.Fatalf("replica reconnected or missed heartbeats: %+v", s)
	}
}

// TestRefusesPositionsOutsideTheLog: a replica ahead of the log, one that
// forked, and one that needs purged transactions each get error 1236.
func TestRefusesPositionsOutsideTheLog(t *testing.T) {
	m := newMaster(t)
	m.exec(t, "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY)")
	for i := 0; i < 5; i++ {
		m.exec(t, fmt.Sprintf("INSERT INTO app.t VALUES (%d)", i))
	}
	m.sync(t)
	srv := startEndpoint(t, m.src, "127.0.0.1:0", time.Second)
	last := m.src.Last()
	cases := []struct {
		name, pos, want string
	}{
		{"ahead", fmt.Sprintf("0-1-%d", last.Seq+10), "ahead of the log"},
		{"forked", "0-9-3", "forked"},
		{"other domain", "5-1-3", "domain"},
	}
	r := newReplica(t, 2)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r.exec(t, "STOP SLAVE", "RESET SLAVE ALL", "SET GLOBAL gtid_slave_pos='"+c.pos+"'")
			r.follow(t, srv.Addr(), 1)
			waitIOError(t, r, 1236, c.want)
		})
	}
	t.Run("purged", func(t *testing.T) {
		txs := readBinlogTxns(t, m.inst, m.db)
		if err := m.src.PurgeThrough(txs[2].GTID); err != nil {
			t.Fatal(err)
		}
		r.exec(t, "STOP SLAVE", "RESET SLAVE ALL", "SET GLOBAL gtid_slave_pos=''")
		r.follow(t, srv.Addr(), 1)
		waitIOError(t, r, 1236, "purged")
		// A replica exactly at the purge point still streams (its IO thread
		// receives everything; it lacks the table, so only the IO side is
		// checked).
		r.exec(t, "STOP SLAVE", "RESET SLAVE ALL", "SET GLOBAL gtid_slave_pos='"+txs[2].GTID.String()+"'")
		r.follow(t, srv.Addr(), 1)
		await(t, time.Minute, func() (bool, string) {
			st := r.status(t)
			return st["Gtid_IO_Pos"] == m.gtidBinlogPos(t), fmt.Sprintf("Gtid_IO_Pos %q IO %s %s", st["Gtid_IO_Pos"], st["Slave_IO_Running"], st["Last_IO_Error"])
		})
	})
	if s := srv.Stats(); s.Refused < 4 {
		t.Fatalf("stats %+v", s)
	}
}

func waitIOError(t *testing.T, r *replica, code int, text string) {
	t.Helper()
	await(t, time.Minute, func() (bool, string) {
		st := r.status(t)
		ok := st["Last_IO_Errno"] == fmt.Sprint(code) && strings.Contains(st["Last_IO_Error"], text)
		return ok, fmt.Sprintf("IO %s: %s %s", st["Slave_IO_Running"], st["Last_IO_Errno"], st["Last_IO_Error"])
	})
	st := r.status(t)
	t.Logf("replica refused as expected: Last_IO_Error: %s", st["Last_IO_Error"])
	if st["Slave_IO_Running"] == "Yes" {
		t.Fatalf("IO thread still running after 1236")
	}
}
