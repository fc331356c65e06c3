package role

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/mysqld"
)

// Upstream is where a replica pulls from: its own binlogd's endpoint.
type Upstream struct {
	Addr           string // host:port of binlogd's replication endpoint
	User, Password string
}

// ErrSeveralDomains means the server has GTIDs in more than one domain;
// phxgo's chain is one domain.
var ErrSeveralDomains = errors.New("role: GTIDs in several domains")

// BecomeReplica makes the server a read-only replica of up. Idempotent:
// when it already replicates from up, only read_only is asserted. It
// refuses (ErrSemiSyncOn) a server whose semi-sync master is still on: a
// demoted master is released by ReleaseSemiSync first.
func BecomeReplica(ctx context.Context, db *sql.DB, up Upstream) error {
	host, portS, err := net.SplitHostPort(up.Addr)
	if err != nil {
		return fmt.Errorf("role: upstream %q: %w", up.Addr, err)
	}
	port, err := strconv.Atoi(portS)
	if err != nil {
		return fmt.Errorf("role: upstream port %q: %w", portS, err)
	}
	if err := ReadOnlyBarrier(ctx, db, barrierWait(ctx)); err != nil {
		return err
	}
	st, err := ReplicaStatus(ctx, db)
	if err != nil {
		return err
	}
	if st.MasterHost == host && st.MasterPort == port && st.IORunning != "No" && st.SQLRunning == "Yes" {
		return nil
	}
	// Semi-sync master off would release any waiting commit with OK:
	// only ReleaseSemiSync, after proving none waits, turns it off.
	if on, err := SemiSyncOn(ctx, db); err != nil {
		return err
	} else if on {
		return ErrSemiSyncOn
	}
	for _, s := range []string{
		"STOP SLAVE",
		// A demoted master's own transactions are in gtid_current_pos but
		// not in gtid_slave_pos; recording them there (durably: the server
		// is still durable at this point) makes the slave pos the whole
		// truth of what InnoDB holds, which ResyncBinlog relies on.
		"SET GLOBAL gtid_slave_pos=@@GLOBAL.gtid_current_pos",
	} {
		if err := exec(ctx, db, s); err != nil {
			return err
		}
	}
	follow := []string{
		fmt.Sprintf("CHANGE MASTER TO MASTER_HOST=%s, MASTER_PORT=%d, MASTER_USER=%s, MASTER_PASSWORD=%s, "+
			"MASTER_USE_GTID=current_pos, MASTER_CONNECT_RETRY=1, MASTER_HEARTBEAT_PERIOD=1",
			mysqld.Quote(host), port, mysqld.Quote(up.User), mysqld.Quote(up.Password)),
		"START SLAVE",
	}
	err = execAll(ctx, db, follow)
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == erMasterInfo {
		// The replication metadata names a relay log that is gone (a
		// power loss kept relay-log.info but not the file it names), and
		// MariaDB refuses every CHANGE MASTER until it is reset. Relay
		// logs hold nothing of their own here: the position is the GTID
		// just recorded, so dropping them and the metadata loses nothing.
		if rerr := exec(ctx, db, "RESET SLAVE ALL"); rerr != nil {
			return errors.Join(err, rerr)
		}
		err = execAll(ctx, db, follow)
	}
	return err
}

// erMasterInfo is ER_MASTER_INFO, "Could not initialize master info
// structure": the replica's relay log or its metadata is broken.
const erMasterInfo = 1201

func execAll(ctx context.Context, db *sql.DB, stmts []string) error {
	for _, s := range stmts {
		if err := exec(ctx, db, s); err != nil {
			return err
		}
	}
	return nil
}

// BecomeMaster stops replication, turns semi-sync master on and read_only
// off. The caller has checked that the server applied every valid
// transaction before the grant, and starts capture right after.
func BecomeMaster(ctx context.Context, db *sql.DB) error {
	for _, s := range []string{
		"SET GLOBAL read_only=ON",
		"STOP SLAVE",
		"RESET SLAVE ALL",
		"SET GLOBAL rpl_semi_sync_master_enabled=ON",
		"SET GLOBAL read_only=OFF",
	} {
		if err := exec(ctx, db, s); err != nil {
			return err
		}
	}
	return nil
}

// SetReadOnly turns read_only on: the first thing a master that lost its
// lease does. It is a ReadOnlyBarrier bounded by ctx: a commit waiting for
// an ACK makes it fail, and then read_only is still off (quiet.go).
func SetReadOnly(ctx context.Context, db *sql.DB) error {
	return ReadOnlyBarrier(ctx, db, barrierWait(ctx))
}

// Applied returns the server's GTID position in the one domain
// (@@gtid_current_pos: what it committed, as master or replica).
func Applied(ctx context.Context, db *sql.DB) (binlog.GTID, error) {
	return globalGTID(ctx, db, "gtid_current_pos")
}

// globalGTID reads a global GTID-list variable that phxgo keeps to one
// domain; more than one is ErrSeveralDomains.
func globalGTID(ctx context.Context, db *sql.DB, variable string) (binlog.GTID, error) {
	var s string
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL."+variable).Scan(&s); err != nil {
		return binlog.GTID{}, fmt.Errorf("role: read %s: %w", variable, err)
	}
	l, err := binlog.ParseGTIDList(s)
	if err != nil {
		return binlog.GTID{}, err
	}
	switch len(l) {
	case 0:
		return binlog.GTID{}, nil
	case 1:
		return l[0], nil
	default:
		return binlog.GTID{}, fmt.Errorf("%w: %s", ErrSeveralDomains, s)
	}
}

// WaitingCommits is how many sessions wait for a semi-sync ACK.
func WaitingCommits(ctx context.Context, db *sql.DB) (int, error) {
	return statusInt(ctx, db, "Rpl_semi_sync_master_wait_sessions")
}

func statusInt(ctx context.Context, db *sql.DB, name string) (int, error) {
	var k, v string
	err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE ?", name).Scan(&k, &v)
	if err != nil {
		return 0, fmt.Errorf("role: status %s: %w", name, err)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("role: status %s=%q: %w", name, v, err)
	}
	return n, nil
}

// Status is the part of SHOW SLAVE STATUS binlogd reports.
type Status struct {
	MasterHost            string
	MasterPort            int
	IORunning, SQLRunning string
	LastIOError           string
	LastSQLError          string
	SecondsBehind         sql.NullInt64
	GTIDSlavePos          string
}

func (s Status) String() string {
	if s.MasterHost == "" {
		return "not replicating"
	}
	out := fmt.Sprintf("Slave_IO_Running=%s Slave_SQL_Running=%s from %s:%d", s.IORunning, s.SQLRunning, s.MasterHost, s.MasterPort)
	if s.LastIOError != "" {
		out += " io_error=" + strconv.Quote(s.LastIOError)
	}
	if s.LastSQLError != "" {
		out += " sql_error=" + strconv.Quote(s.LastSQLError)
	}
	return out
}

// ReplicaStatus reads SHOW SLAVE STATUS; the zero Status when none.
func ReplicaStatus(ctx context.Context, db *sql.DB) (Status, error) {
	rows, err := db.QueryContext(ctx, "SHOW SLAVE STATUS")
	if err != nil {
		return Status{}, fmt.Errorf("role: SHOW SLAVE STATUS: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return Status{}, err
	}
	if !rows.Next() {
		return Status{}, rows.Err()
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return Status{}, err
	}
	var st Status
	for i, c := range cols {
		v := vals[i].String
		switch c {
		case "Master_Host":
			st.MasterHost = v
		case "Master_Port":
			st.MasterPort, _ = strconv.Atoi(v)
		case "Slave_IO_Running":
			st.IORunning = v
		case "Slave_SQL_Running":
			st.SQLRunning = v
		case "Last_IO_Error":
			st.LastIOError = v
		case "Last_SQL_Error":
			st.LastSQLError = v
		case "Seconds_Behind_Master":
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && vals[i].Valid {
				st.SecondsBehind = sql.NullInt64{Int64: n, Valid: true}
			}
		case "Gtid_Slave_Pos":
			st.GTIDSlavePos = v
		}
	}
	return st, rows.Err()
}

func exec(ctx context.Context, db *sql.DB, q string) error {
	if _, err := db.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("role: %s: %w", redact(q), err)
	}
	return nil
}

func redact(q string) string {
	if i := strings.Index(q, "MASTER_PASSWORD="); i >= 0 {
		j := strings.Index(q[i:], ",")
		if j < 0 {
			return q[:i] + "MASTER_PASSWORD='***'"
		}
		return q[:i] + "MASTER_PASSWORD='***'" + q[i+j:]
	}
	return q
}

// MakeDurable makes the server durable on its own: every commit syncs the
// binlog and the redo log again, and what it applied while relaxed is
// flushed now (closing a binlog file syncs it; with
// innodb_flush_log_at_trx_commit=1 FLUSH ENGINE LOGS syncs the redo log).
// A replica about to take writes runs it before read_only goes off. The
// FLUSH statements are never written to the binlog (NO_WRITE_TO_BINLOG):
// a local GTID would not be in the log.
func MakeDurable(ctx context.Context, db *sql.DB) error {
	for _, s := range []string{
		"SET GLOBAL sync_binlog=1",
		"SET GLOBAL innodb_flush_log_at_trx_commit=1",
		"FLUSH NO_WRITE_TO_BINLOG BINARY LOGS",
		"FLUSH NO_WRITE_TO_BINLOG ENGINE LOGS",
	} {
		if err := exec(ctx, db, s); err != nil {
			return err
		}
	}
	return nil
}

// Relax lets a read-only replica skip its own fsyncs: its durability is
// the log, from which it re-fetches what a host crash lost (binlogd
// reports only its synced position as applied, so the log keeps it).
// Never on a server that takes writes: MakeDurable comes first.
func Relax(ctx context.Context, db *sql.DB) error {
	for _, s := range []string{
		"SET GLOBAL sync_binlog=0",
		"SET GLOBAL innodb_flush_log_at_trx_commit=2",
	} {
		if err := exec(ctx, db, s); err != nil {
			return err
		}
	}
	return nil
}

// Durability reads sync_binlog and innodb_flush_log_at_trx_commit.
func Durability(ctx context.Context, db *sql.DB) (syncBinlog, flushAtCommit int, err error) {
	err = db.QueryRowContext(ctx, "SELECT @@GLOBAL.sync_binlog, @@GLOBAL.innodb_flush_log_at_trx_commit").Scan(&syncBinlog, &flushAtCommit)
	if err != nil {
		err = fmt.Errorf("role: read durability settings: %w", err)
	}
	return syncBinlog, flushAtCommit, err
}
