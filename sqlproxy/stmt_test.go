package sqlproxy

import (
	"context"
	"crypto/sha1"
	"database/sql"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"phxgo/binlogd/mysqld"
	"phxgo/sqlproxy/wire"
)

// TestPreparedAcrossBackends executes prepared statements many times while
// the session's backend connection keeps changing (no hold window, reads
// spread over two replicas and the master, pooled connections taken over
// by another session and reset), with go-sql-driver and with a raw client
// that sends parameter types only on the first execute, as libmysqlclient
// and MariaDB Connector/C do (the proxy must put them back: error 1210
// otherwise). It also checks that long data, COM_STMT_RESET and
// COM_STMT_CLOSE survive re-prepares and that closed statements do not
// pile up on pooled connections.
func TestPreparedAcrossBackends(t *testing.T) {
	insts := startInstances(t, 3)
	m := insts[0]
	view := masterView(m, insts[1], insts[2])
	authAddrs := []string{m.Addr()}
	ctx := context.Background()
	setup := appDB(t, m.Addr(), "", false)
	mustExec(t, setup, "CREATE DATABASE stmtdb")
	mustExec(t, setup, "CREATE TABLE stmtdb.t (id INT AUTO_INCREMENT PRIMARY KEY, v BLOB)")

	// Replicas are plain instances (no health checks without an admin
	// user): the echo query needs no table.
	rw := startProxy(t, 1, view, RWSplit, authAddrs, func(c *Config) { c.Hold = 0; c.ReadMasterPercentage = 34 })
	const echo = "SELECT CONCAT(@@server_id, ':', ?)"

	t.Run("go_sql_driver", func(t *testing.T) {
		db := appDB(t, rw.addr, "", false)
		db.SetMaxOpenConns(1)
		st, err := db.PrepareContext(ctx, echo)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		servers := map[string]int{}
		for i := range 200 {
			var got string
			if err := st.QueryRowContext(ctx, i).Scan(&got); err != nil {
				t.Fatalf("execute %d: %v", i, err)
			}
			sid, v, _ := strings.Cut(got, ":")
			if v != fmt.Sprint(i) {
				t.Fatalf("execute %d returned %q", i, got)
			}
			servers[sid]++
		}
		if len(servers) < 3 {
			t.Fatalf("executes ran on %v; want the master and both replicas", servers)
		}
		// Another session takes over this one's pooled connections.
		lin := startProxy(t, 1, view, Linearizable, authAddrs, func(c *Config) { c.Hold = time.Millisecond })
		a, b := appDB(t, lin.addr, "stmtdb", false), appDB(t, lin.addr, "stmtdb", false)
		a.SetMaxOpenConns(1)
		b.SetMaxOpenConns(1)
		ins, err := a.PrepareContext(ctx, "INSERT INTO t (v) VALUES (?)")
		if err != nil {
			t.Fatal(err)
		}
		defer ins.Close()
		for i := range 100 {
			if _, err := ins.ExecContext(ctx, fmt.Sprintf("go%d", i)); err != nil {
				t.Fatalf("insert %d: %v", i, err)
			}
			if i%3 == 0 {
				time.Sleep(2 * time.Millisecond) // past the hold window
			}
			mustExec(t, b, "DO 1")
		}
		var n int
		if err := setup.QueryRowContext(ctx, "SELECT COUNT(*) FROM stmtdb.t WHERE v LIKE 'go%'").Scan(&n); err != nil || n != 100 {
			t.Fatalf("inserted rows: %d, %v; want 100", n, err)
		}
	})

	t.Run("types_sent_once", func(t *testing.T) {
		c := rawConnect(t, rw.addr, "")
		id, params := c.prepare(echo)
		if params != 1 {
			t.Fatalf("params %d", params)
		}
		servers := map[string]int{}
		for i := range 120 {
			var types []byte
			if i == 0 {
				types = []byte{0x08, 0x00} // LONGLONG
			}
			v := binary.LittleEndian.AppendUint64(nil, uint64(i))
			rows, werr := c.execute(id, params, types, v)
			if werr != nil {
				t.Fatalf("execute %d: %v", i, werr)
			}
			if len(rows) != 1 {
				t.Fatalf("execute %d: %d rows", i, len(rows))
			}
			sid, got, _ := strings.Cut(rows[0], ":")
			if got != fmt.Sprint(i) {
				t.Fatalf("execute %d returned %q", i, rows[0])
			}
			servers[sid]++
		}
		if len(servers) < 3 {
			t.Fatalf("executes ran on %v; want the master and both replicas", servers)
		}
		// Statement id -1: the one prepared last (execute-direct).
		rows, werr := c.execute(0xffffffff, params, nil, binary.LittleEndian.AppendUint64(nil, 7))
		if werr != nil || len(rows) != 1 || !strings.HasSuffix(rows[0], ":7") {
			t.Fatalf("execute of statement -1: %q, %v", rows, werr)
		}
	})

	t.Run("long_data_reset_close", func(t *testing.T) {
		lin := startProxy(t, 1, view, Linearizable, authAddrs, func(c *Config) { c.Hold = 0 })
		a, b := rawConnect(t, lin.addr, "stmtdb"), rawConnect(t, lin.addr, "stmtdb")
		other := func() { // b takes (and resets) a's pooled connection
			if werr := b.query("DO 1"); werr != nil {
				t.Fatal(werr)
			}
		}
		id, params := a.prepare("INSERT INTO t (v) VALUES (?)")
		blob := []byte{0xfc, 0x00}
		if _, werr := a.execute(id, params, blob, wire.AppendLenEncString(nil, []byte("raw0"))); werr != nil {
			t.Fatal(werr)
		}
		other()
		a.longData(id, 0, "raw1") // re-prepared on a reset connection
		other()                   // must not take a's connection with the long data
		if _, werr := a.execute(id, params, nil, nil); werr != nil {
			t.Fatalf("execute with long data after re-prepare: %v", werr)
		}
		a.longData(id, 0, "junk")
		if werr := a.stmtReset(id); werr != nil {
			t.Fatal(werr)
		}
		other()
		if _, werr := a.execute(id, params, nil, wire.AppendLenEncString(nil, []byte("raw2"))); werr != nil {
			t.Fatalf("execute after reset and re-prepare: %v", werr)
		}
		var got string
		if err := setup.QueryRowContext(ctx, "SELECT GROUP_CONCAT(v ORDER BY id) FROM stmtdb.t WHERE v LIKE 'raw%' OR v = 'junk'").Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != "raw0,raw1,raw2" {
			t.Fatalf("rows %q, want raw0,raw1,raw2", got)
		}
		a.close(id)
		other()
		if _, werr := a.execute(id, params, nil, nil); werr == nil || werr.Code != 1243 {
			t.Fatalf("execute after close: %v, want 1243", werr)
		}

		// Long data sent before a master change is gone: the execute
		// fails clearly instead of running without it, and the client
		// can send it again.
		lin2 := startProxy(t, 1, view, Linearizable, authAddrs, func(c *Config) { c.Hold = 0 })
		c := rawConnect(t, lin2.addr, "")
		cid, cparams := c.prepare("SELECT CONCAT('x', ?)")
		c.longData(cid, 0, "lost")
		lin2.topo.Set(masterView(insts[1], insts[2]))
		if _, werr := c.execute(cid, cparams, []byte{0xfc, 0}, nil); werr == nil || werr.Code != 1290 || !strings.Contains(werr.Message, "long data") {
			t.Fatalf("execute after the long data's connection was lost: %v, want 1290 long data", werr)
		}
		c.longData(cid, 0, "again")
		if rows, werr := c.execute(cid, cparams, nil, nil); werr != nil || len(rows) != 1 || rows[0] != "xagain" {
			t.Fatalf("execute with long data sent again: %q, %v", rows, werr)
		}

		// Closed statements must not stay prepared on pooled connections.
		before := preparedCount(t, setup)
		for i := range 50 {
			id, params := a.prepare("SELECT CONCAT('x', ?)")
			if _, werr := a.execute(id, params, []byte{0x08, 0}, binary.LittleEndian.AppendUint64(nil, uint64(i))); werr != nil {
				t.Fatal(werr)
			}
			a.close(id)
		}
		if werr := a.query("DO 1"); werr != nil { // carries the last close
			t.Fatal(werr)
		}
		if after := preparedCount(t, setup); after > before+2 {
			t.Fatalf("Prepared_stmt_count %d -> %d after 50 prepare/close cycles", before, after)
		}
	})
}

// preparedCount reads the server's count of open prepared statements.
func preparedCount(t *testing.T, db *sql.DB) int {
	t.Helper()
	var name string
	var n int
	if err := db.QueryRowContext(context.Background(), "SHOW GLOBAL STATUS LIKE 'Prepared_stmt_count'").Scan(&name, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// rawClient speaks the binary protocol to the proxy by hand, to send what
// go-sql-driver never does (executes without parameter types, long data).
type rawClient struct {
	t *testing.T
	b *backend
}

const rawCaps = wire.ClientLongPassword | wire.ClientProtocol41 | wire.ClientSecureConn | wire.ClientPluginAuth |
	wire.ClientTransactions | wire.ClientMultiResults | wire.ClientPSMultiResults

func rawConnect(t *testing.T, addr, db string) *rawClient {
	t.Helper()
	a := mysqld.DefaultAccounts()
	stage1 := sha1.Sum([]byte(a.AppPassword))
	key := poolKey{addr: addr, user: a.AppUser, stage1: string(stage1[:]), caps: rawCaps, charset: 45}
	b, werr, err := dial(context.Background(), DialFrom(nil, 5*time.Second), key, routeMaster, db, 5*time.Second, 5*time.Second, nil, nil, true)
	if err != nil || werr != nil {
		t.Fatalf("raw connect to %s: %v %v", addr, err, werr)
	}
	t.Cleanup(b.close)
	return &rawClient{t: t, b: b}
}

func (c *rawClient) prepare(sql string) (uint32, int) {
	c.t.Helper()
	res, err := c.b.exec(wire.ComStmtPrepare, []byte(sql), rawCaps)
	if err != nil || res.Err != nil {
		c.t.Fatalf("prepare %q: %v %v", sql, err, res.Err)
	}
	return res.StmtID, int(res.Params)
}

func (c *rawClient) query(sql string) *wire.Error {
	c.t.Helper()
	res, err := c.b.exec(wire.ComQuery, []byte(sql), rawCaps)
	if err != nil {
		c.t.Fatalf("%s: %v", sql, err)
	}
	return res.Err
}

// send writes a command that has no answer.
func (c *rawClient) send(pkt []byte) {
	c.t.Helper()
	c.b.c.Seq = 0
	if err := c.b.c.WriteFlush(pkt); err != nil {
		c.t.Fatal(err)
	}
}

// sendSync sends a command that has no answer, then a COM_PING (which the
// proxy answers itself), so the command was handled when it returns.
func (c *rawClient) sendSync(pkt []byte) {
	c.t.Helper()
	c.send(pkt)
	if res, err := c.b.exec(wire.ComPing, nil, rawCaps); err != nil || res.Err != nil {
		c.t.Fatalf("ping: %v %v", err, res.Err)
	}
}

func (c *rawClient) longData(id uint32, param uint16, data string) {
	p := binary.LittleEndian.AppendUint32([]byte{wire.ComStmtSendLong}, id)
	p = binary.LittleEndian.AppendUint16(p, param)
	c.sendSync(append(p, data...))
}

func (c *rawClient) close(id uint32) {
	c.sendSync(binary.LittleEndian.AppendUint32([]byte{wire.ComStmtClose}, id))
}

func (c *rawClient) stmtReset(id uint32) *wire.Error {
	c.t.Helper()
	res, err := c.b.exec(wire.ComStmtReset, binary.LittleEndian.AppendUint32(nil, id), rawCaps)
	if err != nil {
		c.t.Fatal(err)
	}
	return res.Err
}

// execute runs statement id; types nil sends new_params_bound_flag 0. It
// returns the first column of each row as text (string columns only).
func (c *rawClient) execute(id uint32, params int, types, values []byte) ([]string, *wire.Error) {
	c.t.Helper()
	p := binary.LittleEndian.AppendUint32([]byte{wire.ComStmtExecute}, id)
	p = append(p, 0, 1, 0, 0, 0)
	if params > 0 {
		p = append(p, make([]byte, (params+7)/8)...)
		if types == nil {
			p = append(p, 0)
		} else {
			p = append(p, 1)
			p = append(p, types...)
		}
		p = append(p, values...)
	}
	c.send(p)
	first, err := c.b.c.ReadPacket()
	if err != nil {
		c.t.Fatal(err)
	}
	switch first[0] {
	case wire.HeaderOK:
		return nil, nil
	case wire.HeaderErr:
		return nil, wire.ParseError(first)
	}
	ncol, _, _ := wire.ReadLenEnc(first)
	for range ncol + 1 { // column definitions, EOF
		if _, err := c.b.c.ReadPacket(); err != nil {
			c.t.Fatal(err)
		}
	}
	var rows []string
	for {
		r, err := c.b.c.ReadPacket()
		if err != nil {
			c.t.Fatal(err)
		}
		switch {
		case r[0] == wire.HeaderErr:
			return rows, wire.ParseError(r)
		case r[0] == wire.HeaderEOF && len(r) < 9:
			return rows, nil
		}
		v, _, ok := wire.ReadLenEncString(r[1+(int(ncol)+9)/8:])
		if !ok {
			c.t.Fatalf("binary row %x", r)
		}
		rows = append(rows, string(v))
	}
}
