package sqlproxy

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"phxgo/sqlproxy/topology"
)

// replicaState is the last health check of one replica.
type replicaState struct {
	ID      uint32        `json:"id"`
	Addr    string        `json:"addr"`
	Healthy bool          `json:"healthy"`
	Lag     time.Duration `json:"lag_ns"`
	GTIDPos string        `json:"gtid_current_pos"`
	// Behind is how many transactions the replica lacked, per GTID
	// sequence numbers, against the master's @@gtid_binlog_pos read just
	// before (MasterPos); -1 when the master's position is unknown.
	Behind    int64     `json:"behind_tx"`
	MasterPos string    `json:"master_gtid_binlog_pos,omitempty"`
	Error     string    `json:"error,omitempty"`
	CheckedAt time.Time `json:"checked_at"`

	pos gtidPos // GTIDPos parsed
}

// health checks replicas with the admin account: replication running,
// Seconds_Behind_Master within MaxReplicaLag, and GTID position at most
// MaxReplicaBehind transactions behind the master's binlog position
// (Seconds_Behind_Master alone misses a replica whose I/O thread is
// stalled: it reads 0 while nothing arrives). Each round reads the
// master's position first, then the replicas', so Behind can only
// understate by what the replica applied meanwhile, never overstate a
// healthy replica's lag by more than the master committed meanwhile.
// Without an admin account
// every replica counts as healthy (an unreachable one still falls back to
// the master at connect time).
type health struct {
	srv *Server
	mu  sync.Mutex
	st  map[string]*replicaState
	dbs map[string]*sql.DB
}

func newHealth(s *Server) *health {
	return &health{srv: s, st: map[string]*replicaState{}, dbs: map[string]*sql.DB{}}
}

func (h *health) enabled() bool { return h.srv.cfg.AdminUser != "" }

// healthy returns the replicas of v that may take reads.
func (h *health) healthy(v topology.View) []topology.Replica {
	if !h.enabled() {
		return v.Replicas
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]topology.Replica, 0, len(v.Replicas))
	for _, r := range v.Replicas {
		if st := h.st[r.MySQLAddr]; st != nil && st.Healthy {
			out = append(out, r)
		}
	}
	return out
}

func (h *health) snapshot() []replicaState {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]replicaState, 0, len(h.st))
	for _, st := range h.st {
		out = append(out, *st)
	}
	return out
}

func (h *health) run(ctx context.Context) {
	defer func() {
		for _, db := range h.dbs {
			db.Close()
		}
	}()
	if !h.enabled() {
		<-ctx.Done()
		return
	}
	t := time.NewTicker(h.srv.cfg.HealthInterval)
	defer t.Stop()
	for {
		v := h.srv.topo.View()
		var master gtidPos
		if v.MasterMySQLAddr != "" {
			master = h.masterPos(ctx, h.db(v.MasterMySQLAddr))
		}
		var wg sync.WaitGroup
		for _, r := range v.Replicas {
			db := h.db(r.MySQLAddr)
			wg.Add(1)
			go func() {
				defer wg.Done()
				st := h.check(ctx, db, r, master)
				h.mu.Lock()
				h.st[r.MySQLAddr] = st
				h.mu.Unlock()
			}()
		}
		wg.Wait()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (h *health) db(addr string) *sql.DB {
	if db := h.dbs[addr]; db != nil {
		return db
	}
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr = h.srv.cfg.AdminUser, h.srv.cfg.AdminPassword, "tcp", addr
	cfg.Timeout, cfg.ReadTimeout = time.Second, 2*time.Second
	cfg.DialFunc = DialFrom(h.srv.cfg.SourceIP, time.Second)
	if t := h.srv.cfg.MySQLTLS; t != nil {
		cfg.TLS = MySQLClientTLS(t, addr, MySQLNodeAt(h.srv.topo, addr))
	}
	c, _ := mysql.NewConnector(cfg)
	db := sql.OpenDB(c)
	db.SetMaxIdleConns(1)
	h.dbs[addr] = db
	return db
}

// covers reports whether the last check of the replica at addr saw it
// at or past pos (positions only grow, so a stale check is still true).
func (h *health) covers(addr string, pos gtidPos) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.st[addr]
	return st != nil && st.pos != nil && st.pos.covers(pos)
}

// masterPos reads the master's binlog position; nil when unknown.
func (h *health) masterPos(ctx context.Context, db *sql.DB) gtidPos {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var s string
	if err := db.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&s); err != nil {
		return nil
	}
	pos, err := parseGTIDPos(s)
	if err != nil {
		return nil
	}
	return pos
}

func (h *health) check(ctx context.Context, db *sql.DB, r topology.Replica, master gtidPos) *replicaState {
	st := &replicaState{ID: r.ID, Addr: r.MySQLAddr, CheckedAt: time.Now(), Behind: -1}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	lag, pos, readOnly, err := replicaLagFresh(ctx, db)
	if err != nil {
		st.Error = err.Error()
		return st
	}
	st.Lag, st.GTIDPos = lag, pos
	if st.pos, err = parseGTIDPos(pos); err != nil {
		st.Error = err.Error()
		return st
	}
	if master != nil {
		st.MasterPos = master.String()
		st.Behind = int64(st.pos.behind(master))
	}
	rules := h.srv.rules() // a reload may change them (reload.go)
	switch {
	case !readOnly:
		// A read may call a stored function that writes: read_only is
		// what refuses it there, and a replica that took it would fork
		// from the log (third red-team pass, session 37).
		st.Error = "read_only is off: not a replica to send reads to"
	case lag < 0:
		st.Error = "replication not running"
	case lag > rules.MaxReplicaLag:
		st.Error = fmt.Sprintf("Seconds_Behind_Master %v > max-replica-lag %v", lag, rules.MaxReplicaLag)
	case st.Behind > rules.MaxReplicaBehind:
		st.Error = fmt.Sprintf("%d transactions behind the master > max-replica-behind %d", st.Behind, rules.MaxReplicaBehind)
	default:
		st.Healthy = true
	}
	return st
}

// replicaLagFresh runs replicaLag on one of db's connections and closes
// that connection if the check fails. MariaDB fixes a session's global
// privileges when it logs in: a connection opened between binlogd's
// CREATE USER and its GRANT SLAVE MONITOR fails SHOW SLAVE STATUS for
// as long as it lives, and the pool would keep it (in CI a learner's
// own proxy judged it unhealthy for a minute that way).
func replicaLagFresh(ctx context.Context, db *sql.DB) (lag time.Duration, pos string, readOnly bool, err error) {
	c, err := db.Conn(ctx)
	if err != nil {
		return 0, "", false, err
	}
	defer c.Close()
	if err := c.QueryRowContext(ctx, "SELECT @@global.read_only").Scan(&readOnly); err != nil {
		_ = c.Raw(func(any) error { return driver.ErrBadConn })
		return 0, "", false, err
	}
	lag, pos, err = replicaLag(ctx, c)
	if err != nil {
		_ = c.Raw(func(any) error { return driver.ErrBadConn })
	}
	return lag, pos, readOnly, err
}

// replicaLag reads Seconds_Behind_Master (-1 when replication is not
// running) and @@gtid_current_pos.
func replicaLag(ctx context.Context, db interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}) (time.Duration, string, error) {
	var pos string
	if err := db.QueryRowContext(ctx, "SELECT @@gtid_current_pos").Scan(&pos); err != nil {
		return 0, "", err
	}
	rows, err := db.QueryContext(ctx, "SHOW SLAVE STATUS")
	if err != nil {
		return 0, pos, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return 0, pos, err
	}
	if !rows.Next() {
		return -1, pos, rows.Err()
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return 0, pos, err
	}
	for i, c := range cols {
		if c == "Seconds_Behind_Master" {
			if !vals[i].Valid {
				return -1, pos, nil
			}
			var secs int64
			for _, ch := range vals[i].String {
				secs = secs*10 + int64(ch-'0')
			}
			return time.Duration(secs) * time.Second, pos, nil
		}
	}
	return -1, pos, nil
}
