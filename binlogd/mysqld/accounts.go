package mysqld

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// Accounts are the MySQL users phxgo creates on every node.
//
// Capture holds REPLICATION SLAVE: any semi-sync replica's ACK releases
// commits on a master, so binlogd's capture must be the only account that
// may register as a replica. App is what clients use: it holds privileges
// on the application databases only (AppDatabases) — nothing on the mysql
// schema, no FILE, SUPER, PROCESS or REPLICATION, no global CREATE/DROP —
// because read_only does not stop SUPER or READ ONLY ADMIN (a write on a
// replica forks the data) and a grant on the grant tables is every grant.
type Accounts struct {
	CaptureUser, CapturePassword string
	AppUser, AppPassword         string
	// AppDatabases are GRANT patterns (LIKE syntax) of the databases App
	// may use; nil means DefaultAppDatabases.
	AppDatabases []string
	// Proxy is sqlproxy's admin account: it reads mysql.user (a few
	// columns) to verify clients and checks replicas' lag. Optional
	// (empty: not created).
	ProxyUser, ProxyPassword string
}

// DefaultAccounts are the names used by tests and `make cluster`.
func DefaultAccounts() Accounts {
	return Accounts{CaptureUser: "phxgo_capture", CapturePassword: "capture-secret", AppUser: "app", AppPassword: "app-secret",
		ProxyUser: "phxgo_proxy", ProxyPassword: "proxy-secret"}
}

// appPrivileges is what an application needs inside its own databases
// (granted per app_databases pattern, never on *.*), and nothing that
// bypasses read_only.
const appPrivileges = "SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, INDEX, " +
	"CREATE TEMPORARY TABLES, LOCK TABLES, EXECUTE, CREATE VIEW, SHOW VIEW, " +
	"CREATE ROUTINE, ALTER ROUTINE, REFERENCES, TRIGGER, EVENT"

// proxyColumns are the mysql.user columns sqlproxy's auth store reads
// (sqlproxy/auth/store.go): an account's name, host, plugin and hash,
// and whether it requires TLS (ssl_type).
const proxyColumns = "Host, User, plugin, authentication_string, password_expired, is_role, ssl_type"

// Bootstrap creates or corrects the accounts without writing to the
// binlog (sql_log_bin=0): each node bootstraps itself, so no GTID exists
// before the first replicated transaction. It is idempotent and runs at
// every binlogd start, so a datadir made by an older phxgo is brought to
// the current grants too (old broad grants are revoked). It first locks
// down administrative access (Harden). db must be the admin connection.
func Bootstrap(ctx context.Context, db *sql.DB, a Accounts) error {
	dbs := a.AppDatabases
	if dbs == nil {
		dbs = DefaultAppDatabases
	}
	if err := ValidateAppDatabases(dbs); err != nil {
		return err
	}
	return withoutBinlog(ctx, db, func(c *sql.Conn) error {
		if err := harden(ctx, c, AdminUser()); err != nil {
			return err
		}
		if err := ensureUser(ctx, c, a.CaptureUser, a.CapturePassword); err != nil {
			return err
		}
		if err := execAll(ctx, c, fmt.Sprintf("GRANT REPLICATION SLAVE, REPLICATION CLIENT, BINLOG MONITOR ON *.* TO %s@'%%'", Quote(a.CaptureUser))); err != nil {
			return err
		}
		if err := ensureUser(ctx, c, a.AppUser, a.AppPassword); err != nil {
			return err
		}
		if err := narrowGrants(ctx, c, a.AppUser, dbs); err != nil {
			return err
		}
		for _, p := range dbs {
			if err := execAll(ctx, c, fmt.Sprintf("GRANT %s ON %s.* TO %s@'%%'", appPrivileges, quoteIdent(p), Quote(a.AppUser))); err != nil {
				return err
			}
		}
		if a.ProxyUser == "" {
			return nil
		}
		if err := ensureUser(ctx, c, a.ProxyUser, a.ProxyPassword); err != nil {
			return err
		}
		if err := narrowGrants(ctx, c, a.ProxyUser, nil); err != nil {
			return err
		}
		return execAll(ctx, c,
			fmt.Sprintf("GRANT SELECT (%s) ON mysql.user TO %s@'%%'", proxyColumns, Quote(a.ProxyUser)),
			fmt.Sprintf("GRANT SLAVE MONITOR ON *.* TO %s@'%%'", Quote(a.ProxyUser)))
	})
}

// withoutBinlog runs f on one connection with sql_log_bin=0. A connection
// that cannot be switched back is discarded, never returned to the pool
// with logging off (its later writes would escape the binlog).
func withoutBinlog(ctx context.Context, db *sql.DB, f func(*sql.Conn) error) error {
	c, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if _, err := c.ExecContext(context.Background(), "SET SESSION sql_log_bin=1"); err != nil {
			_ = c.Raw(func(any) error { return driver.ErrBadConn })
		}
		c.Close()
	}()
	if _, err := c.ExecContext(ctx, "SET SESSION sql_log_bin=0"); err != nil {
		return fmt.Errorf("mysqld: accounts: %w", err)
	}
	return f(c)
}

func ensureUser(ctx context.Context, c *sql.Conn, user, password string) error {
	return execAll(ctx, c,
		fmt.Sprintf("CREATE USER IF NOT EXISTS %s@'%%' IDENTIFIED BY %s", Quote(user), Quote(password)),
		fmt.Sprintf("ALTER USER %s@'%%' IDENTIFIED BY %s", Quote(user), Quote(password)))
}

// narrowGrants revokes what user@'%' holds beyond keep: every global
// privilege (with GRANT OPTION), db-level grants on patterns not in keep,
// and table-level grants in system schemas. It revokes only what is
// there, so a node whose grants are already right changes nothing and
// its clients never see a moment without privileges.
func narrowGrants(ctx context.Context, c *sql.Conn, user string, keep []string) error {
	acct := Quote(user) + "@'%'"
	global, err := hasGlobalPrivileges(ctx, c, user)
	if err != nil {
		return err
	}
	if global {
		if err := revoke(ctx, c, "*.*", acct); err != nil {
			return err
		}
	}
	want := map[string]bool{}
	for _, k := range keep {
		want[k] = true
	}
	dbs, err := strings1(ctx, c, "SELECT Db FROM mysql.db WHERE User = ? AND Host = '%'", user)
	if err != nil {
		return err
	}
	for _, d := range dbs {
		if !want[d] {
			if err := revoke(ctx, c, quoteIdent(d)+".*", acct); err != nil {
				return err
			}
		}
	}
	rows, err := c.QueryContext(ctx, "SELECT Db, Table_name FROM mysql.tables_priv WHERE User = ? AND Host = '%' AND Db IN ('mysql','sys','performance_schema')", user)
	if err != nil {
		return fmt.Errorf("mysqld: accounts: read table grants: %w", err)
	}
	var tables [][2]string
	for rows.Next() {
		var d, t string
		if err := rows.Scan(&d, &t); err != nil {
			rows.Close()
			return err
		}
		tables = append(tables, [2]string{d, t})
	}
	rows.Close()
	for _, t := range tables {
		if err := revoke(ctx, c, quoteIdent(t[0])+"."+quoteIdent(t[1]), acct); err != nil {
			return err
		}
	}
	return nil
}

// revoke removes every privilege acct holds on what. MariaDB's "REVOKE ALL
// PRIVILEGES, GRANT OPTION" takes no ON clause, hence two statements.
// Once one statement empties the grant, the other finds none: 1141/1147
// ("no such grant") then means done.
func revoke(ctx context.Context, c *sql.Conn, what, acct string) error {
	for _, s := range []string{"REVOKE GRANT OPTION ON " + what + " FROM " + acct, "REVOKE ALL PRIVILEGES ON " + what + " FROM " + acct} {
		var me *mysql.MySQLError
		if err := execAll(ctx, c, s); err != nil && !(errors.As(err, &me) && (me.Number == 1141 || me.Number == 1147)) {
			return err
		}
	}
	return nil
}

// hasGlobalPrivileges reports whether user@'%' holds any global privilege
// mysql.user shows as a *_priv column (the pre-10.5 privileges, which
// include every one the old broad grants gave).
func hasGlobalPrivileges(ctx context.Context, c *sql.Conn, user string) (bool, error) {
	rows, err := c.QueryContext(ctx, "SELECT * FROM mysql.user WHERE User = ? AND Host = '%'", user)
	if err != nil {
		return false, fmt.Errorf("mysqld: accounts: read mysql.user: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return false, err
	}
	found := false
	for rows.Next() {
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return false, err
		}
		for i, col := range cols {
			if strings.HasSuffix(strings.ToLower(col), "_priv") && string(vals[i]) == "Y" {
				found = true
			}
		}
	}
	return found, rows.Err()
}

func strings1(ctx context.Context, c *sql.Conn, q string, args ...any) ([]string, error) {
	out, err := QueryStrings(ctx, c, q, args...)
	if err != nil {
		return nil, fmt.Errorf("mysqld: accounts: %s: %w", q, err)
	}
	return out, nil
}

func execAll(ctx context.Context, c *sql.Conn, stmts ...string) error {
	for _, s := range stmts {
		if _, err := c.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("mysqld: accounts: %s: %w", redact(s), err)
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
