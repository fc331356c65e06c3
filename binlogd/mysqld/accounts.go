package mysqld

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// Accounts are the MySQL users phxgo creates on every node.
//
// Capture holds REPLICATION SLAVE: any semi-sync replica's ACK releases
// commits on a master, so binlogd's capture must be the only account that
// may register as a replica. App is what clients use: it must not hold
// SUPER or READ ONLY ADMIN, because read_only does not stop those, and a
// write accepted by a replica would fork the data.
type Accounts struct {
	CaptureUser, CapturePassword string
	AppUser, AppPassword         string
	// Proxy is sqlproxy's admin account: it reads mysql.user to verify
	// clients and checks replicas' lag. Optional (empty: not created).
	ProxyUser, ProxyPassword string
}

// DefaultAccounts are the names used by tests and `make cluster`.
func DefaultAccounts() Accounts {
	return Accounts{CaptureUser: "phxgo_capture", CapturePassword: "capture-secret", AppUser: "app", AppPassword: "app-secret",
		ProxyUser: "phxgo_proxy", ProxyPassword: "proxy-secret"}
}

// appPrivileges is everything an application needs, and nothing that
// bypasses read_only.
const appPrivileges = "SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, INDEX, " +
	"CREATE TEMPORARY TABLES, LOCK TABLES, EXECUTE, CREATE VIEW, SHOW VIEW, " +
	"CREATE ROUTINE, ALTER ROUTINE, REFERENCES, TRIGGER, EVENT, PROCESS"

// Bootstrap creates the accounts without writing to the binlog
// (sql_log_bin=0): each node bootstraps itself, so no GTID exists before
// the first replicated transaction. It is idempotent. Semi-sync must be
// OFF while it runs (see package doc).
func Bootstrap(ctx context.Context, db *sql.DB, a Accounts) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	stmts := []string{
		"SET SESSION sql_log_bin=0",
		fmt.Sprintf("CREATE USER IF NOT EXISTS %s@'%%' IDENTIFIED BY %s", Quote(a.CaptureUser), Quote(a.CapturePassword)),
		fmt.Sprintf("ALTER USER %s@'%%' IDENTIFIED BY %s", Quote(a.CaptureUser), Quote(a.CapturePassword)),
		fmt.Sprintf("GRANT REPLICATION SLAVE, REPLICATION CLIENT, BINLOG MONITOR ON *.* TO %s@'%%'", Quote(a.CaptureUser)),
		fmt.Sprintf("CREATE USER IF NOT EXISTS %s@'%%' IDENTIFIED BY %s", Quote(a.AppUser), Quote(a.AppPassword)),
		fmt.Sprintf("ALTER USER %s@'%%' IDENTIFIED BY %s", Quote(a.AppUser), Quote(a.AppPassword)),
		fmt.Sprintf("GRANT %s ON *.* TO %s@'%%'", appPrivileges, Quote(a.AppUser)),
	}
	if a.ProxyUser != "" {
		stmts = append(stmts,
			fmt.Sprintf("CREATE USER IF NOT EXISTS %s@'%%' IDENTIFIED BY %s", Quote(a.ProxyUser), Quote(a.ProxyPassword)),
			fmt.Sprintf("ALTER USER %s@'%%' IDENTIFIED BY %s", Quote(a.ProxyUser), Quote(a.ProxyPassword)),
			fmt.Sprintf("GRANT SELECT ON mysql.* TO %s@'%%'", Quote(a.ProxyUser)),
			fmt.Sprintf("GRANT SLAVE MONITOR ON *.* TO %s@'%%'", Quote(a.ProxyUser)),
		)
	}
	stmts = append(stmts, "SET SESSION sql_log_bin=1")
	for _, s := range stmts {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("mysqld: bootstrap accounts: %s: %w", redact(s), err)
		}
	}
	return nil
}

// Quote makes s a single-quoted SQL string literal.
func Quote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// redact keeps passwords out of error messages and logs.
func redact(stmt string) string {
	if i := strings.Index(stmt, "IDENTIFIED BY"); i >= 0 {
		return stmt[:i] + "IDENTIFIED BY '***'"
	}
	return stmt
}
