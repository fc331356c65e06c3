package replserver

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/mysqld"
)

const (
	testUser     = "repl"
	testPassword = "repl-secret"
	endpointID   = 100
)

// master is a real MariaDB whose binlog supplies the transactions the
// endpoint serves: tests write rows on it, then copy its new binlog
// transactions into a MemorySource.
type master struct {
	inst *mysqld.Instance
	db   *sql.DB
	src  *MemorySource
}

func newMaster(t *testing.T) *master {
	t.Helper()
	inst := mysqld.NewTestInstance(t, 1)
	db := inst.TestDB(t)
	return &master{inst: inst, db: db, src: NewMemorySource(0)}
}

func (m *master) exec(t *testing.T, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := m.db.Exec(s); err != nil {
			t.Fatalf("master: %s: %v", trunc(s), err)
		}
	}
}

// sync appends the master's binlog transactions newer than the source's
// last GTID to the source.
func (m *master) sync(t *testing.T) {
	t.Helper()
	all := readBinlogTxns(t, m.inst, m.db)
	last := m.src.Last()
	var add []binlog.Txn
	for _, tx := range all {
		if tx.GTID.Seq > last.Seq {
			add = append(add, tx)
		}
	}
	if err := m.src.Append(add...); err != nil {
		t.Fatal(err)
	}
}

func (m *master) gtidBinlogPos(t *testing.T) string {
	t.Helper()
	return queryString(t, m.db, "SELECT @@GLOBAL.gtid_binlog_pos")
}

// readBinlogTxns parses every binlog file of inst into whole transactions,
// events kept byte for byte (package binlog's wire shape).
func readBinlogTxns(t *testing.T, inst *mysqld.Instance, db *sql.DB) []binlog.Txn {
	t.Helper()
	rows, err := db.Query("SHOW BINARY LOGS")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	cols, _ := rows.Columns()
	for rows.Next() {
		vals := make([]any, len(cols))
		var name string
		vals[0] = &name
		for i := 1; i < len(cols); i++ {
			vals[i] = new(sql.RawBytes)
		}
		if err := rows.Scan(vals...); err != nil {
			t.Fatal(err)
		}
		files = append(files, name)
	}
	rows.Close()
	var out []binlog.Txn
	var cur *binlog.Txn
	standalone := false
	end := func() {
		out = append(out, *cur)
		cur = nil
	}
	p := replication.NewBinlogParser()
	p.SetFlavor("mariadb")
	for _, f := range files {
		err := p.ParseFile(filepath.Join(inst.DataDir(), f), 4, func(e *replication.BinlogEvent) error {
			switch ev := e.Event.(type) {
			case *replication.MariadbGTIDEvent:
				if cur != nil {
					return fmt.Errorf("GTID %v inside an open transaction", ev.GTID)
				}
				cur = &binlog.Txn{GTID: binlog.GTID{Domain: ev.GTID.DomainID, Server: ev.GTID.ServerID, Seq: ev.GTID.SequenceNumber}}
				standalone = ev.IsStandalone()
			}
			if cur == nil {
				return nil // FDE, GTID_LIST, BINLOG_CHECKPOINT, ROTATE
			}
			cur.Events = append(cur.Events, e.RawData...)
			switch ev := e.Event.(type) {
			case *replication.XIDEvent:
				end()
			case *replication.QueryEvent:
				q := strings.ToUpper(strings.TrimSpace(string(ev.Query)))
				if standalone || q == "COMMIT" || q == "ROLLBACK" {
					end()
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("parse %s: %v", f, err)
		}
	}
	if cur != nil {
		t.Fatalf("binlog ends inside transaction %s", cur.GTID)
	}
	return out
}

// replica is a real MariaDB replicating from the endpoint.
type replica struct {
	inst *mysqld.Instance
	db   *sql.DB
}

func newReplica(t *testing.T, serverID uint32) *replica {
	t.Helper()
	inst := mysqld.NewTestInstance(t, serverID)
	db, err := inst.DB("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db.Close()
		if t.Failed() {
			b, _ := os.ReadFile(inst.ErrorLog())
			if len(b) > 4000 {
				b = b[len(b)-4000:]
			}
			t.Logf("replica error log tail:\n%s", b)
		}
	})
	return &replica{inst: inst, db: db}
}

func (r *replica) exec(t *testing.T, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := r.db.Exec(s); err != nil {
			t.Fatalf("replica: %s: %v", s, err)
		}
	}
}

// follow points the replica at the endpoint and starts it.
func (r *replica) follow(t *testing.T, addr string, heartbeat float64) {
	t.Helper()
	host, port, _ := strings.Cut(addr, ":")
	r.exec(t, fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='%s', MASTER_PORT=%s, MASTER_USER='%s', MASTER_PASSWORD='%s', "+
		"MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1, MASTER_HEARTBEAT_PERIOD=%g", host, port, testUser, testPassword, heartbeat),
		"START SLAVE")
}

func (r *replica) status(t *testing.T) map[string]string {
	t.Helper()
	m, err := mysqld.QueryRowMap(context.Background(), r.db, "SHOW SLAVE STATUS")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (r *replica) statusVar(t *testing.T, name string) string {
	t.Helper()
	var n, v string
	if err := r.db.QueryRow("SHOW GLOBAL STATUS LIKE '"+name+"'").Scan(&n, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// waitCaughtUp waits until the replica's gtid_slave_pos is want, failing
// early with the replica's errors if its threads stop.
func (r *replica) waitCaughtUp(t *testing.T, want string, timeout time.Duration) {
	t.Helper()
	await(t, timeout, func() (bool, string) {
		got := queryString(t, r.db, "SELECT @@GLOBAL.gtid_slave_pos")
		if got == want {
			return true, ""
		}
		st := r.status(t)
		// Connection errors while the endpoint restarts are transient; a
		// stopped thread is not.
		if st["Slave_IO_Running"] == "No" || st["Slave_SQL_Running"] == "No" || st["Last_SQL_Errno"] != "0" {
			t.Fatalf("replica failed: IO %s %s; SQL %s %s", st["Last_IO_Errno"], st["Last_IO_Error"], st["Last_SQL_Errno"], st["Last_SQL_Error"])
		}
		return false, fmt.Sprintf("gtid_slave_pos %q, want %q; IO=%s SQL=%s", got, want, st["Slave_IO_Running"], st["Slave_SQL_Running"])
	})
}

// await polls cond until it holds or timeout passes.
func await(t *testing.T, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v: %s", timeout, why)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func queryString(t *testing.T, db *sql.DB, q string) string {
	t.Helper()
	var s sql.NullString
	if err := db.QueryRow(q).Scan(&s); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return s.String
}

// checksums returns CHECKSUM TABLE for each table.
func checksums(t *testing.T, db *sql.DB, tables ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, tb := range tables {
		var name string
		var sum sql.NullString
		if err := db.QueryRow("CHECKSUM TABLE "+tb).Scan(&name, &sum); err != nil {
			t.Fatal(err)
		}
		if !sum.Valid {
			t.Fatalf("table %s missing", tb)
		}
		out[tb] = sum.String
	}
	return out
}

func sameTables(t *testing.T, m *master, r *replica, tables ...string) {
	t.Helper()
	a, b := checksums(t, m.db, tables...), checksums(t, r.db, tables...)
	for _, tb := range tables {
		if a[tb] != b[tb] {
			t.Fatalf("table %s: master checksum %s, replica %s", tb, a[tb], b[tb])
		}
	}
}

// followingReplica serves m's log on an endpoint (heartbeat 1s) and
// returns it with a replica (server id 2) that follows it and has caught
// up with m.
func followingReplica(t *testing.T, m *master) (*Server, *replica) {
	t.Helper()
	srv := startEndpoint(t, m.src, "127.0.0.1:0", time.Second)
	r := newReplica(t, 2)
	r.follow(t, srv.Addr(), 1)
	r.waitCaughtUp(t, m.gtidBinlogPos(t), time.Minute)
	return srv, r
}

// startEndpoint serves src on addr ("127.0.0.1:0" for any port).
func startEndpoint(t *testing.T, src Source, addr string, hb time.Duration) *Server {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Addr, cfg.User, cfg.Password, cfg.ServerID = addr, testUser, testPassword, endpointID
	cfg.HeartbeatPeriod = hb
	s, err := New(cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	var lerr error
	for i := 0; i < 100; i++ { // a restarted endpoint may find its port in TIME_WAIT briefly
		if lerr = s.Listen(); lerr == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if lerr != nil {
		t.Fatal(lerr)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func splitHostPort(addr string) (string, uint16, error) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	n, err := strconv.Atoi(p)
	return h, uint16(n), err
}
