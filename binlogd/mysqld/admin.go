package mysqld

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os/user"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
)

// AdminUser is the MariaDB account binlogd (and every tool of this
// package) administers its MariaDB with: the name of the OS user this
// process runs as, authenticated by unix_socket over the instance's
// socket. The server checks the socket peer's uid, so the account is
// reachable by that OS user only, never over TCP and never with a
// password. When binlogd runs as root the account is root@localhost; as
// another OS user (say phxgo) it is phxgo@localhost, with all privileges,
// and root@localhost is still socket-only (reachable by OS root alone).
func AdminUser() string {
	adminOnce.Do(func() {
		adminName = "root"
		if u, err := user.Current(); err == nil && u.Username != "" {
			adminName = u.Username
		}
	})
	return adminName
}

var (
	adminOnce sync.Once
	adminName string
)

// harden makes administrative access socket-only; c must be an admin
// connection with sql_log_bin=0. It is idempotent and repairs a datadir
// made by an older phxgo (mariadb-install-db
// --auth-root-authentication-method=normal: root@localhost, root@::1,
// root@127.0.0.1 and root@<hostname>, all without a password):
//
//   - admin@localhost is IDENTIFIED VIA unix_socket with all privileges;
//   - root@localhost, when it exists, is IDENTIFIED VIA unix_socket;
//   - root at any other host and anonymous accounts are dropped;
//   - any other account that logs in without a password is locked.
func harden(ctx context.Context, c *sql.Conn, admin string) error {
	stmts := []string{}
	if admin != "root" {
		stmts = append(stmts,
			fmt.Sprintf("CREATE USER IF NOT EXISTS %s@localhost IDENTIFIED VIA unix_socket", Quote(admin)),
			fmt.Sprintf("ALTER USER %s@localhost IDENTIFIED VIA unix_socket", Quote(admin)),
			fmt.Sprintf("GRANT ALL PRIVILEGES ON *.* TO %s@localhost WITH GRANT OPTION", Quote(admin)))
	}
	stmts = append(stmts, "ALTER USER IF EXISTS 'root'@'localhost' IDENTIFIED VIA unix_socket")
	if err := execAll(ctx, c, stmts...); err != nil {
		return err
	}
	drop, err := accounts(ctx, c, "SELECT User, Host FROM mysql.global_priv WHERE User = '' OR (User = 'root' AND Host <> 'localhost')")
	if err != nil {
		return err
	}
	for _, a := range drop {
		if err := execAll(ctx, c, fmt.Sprintf("DROP USER IF EXISTS %s@%s", Quote(a[0]), Quote(a[1]))); err != nil {
			return err
		}
	}
	// Passwordless: a native (or missing) plugin with an empty hash and no
	// alternative method; roles cannot log in and locked ones already
	// cannot. An empty mysql_native_password hash accepts an empty password.
	lock, err := accounts(ctx, c, `SELECT User, Host FROM mysql.global_priv
		WHERE IFNULL(JSON_VALUE(Priv, '$.plugin'), 'mysql_native_password') IN ('mysql_native_password', 'mysql_old_password', '')
		  AND IFNULL(JSON_VALUE(Priv, '$.authentication_string'), '') = ''
		  AND NOT JSON_CONTAINS_PATH(Priv, 'one', '$.auth_or')
		  AND IFNULL(JSON_VALUE(Priv, '$.account_locked'), '0') NOT IN ('1', 'true')
		  AND IFNULL(JSON_VALUE(Priv, '$.is_role'), '0') NOT IN ('1', 'true')`)
	if err != nil {
		return err
	}
	for _, a := range lock {
		if err := execAll(ctx, c, fmt.Sprintf("ALTER USER %s@%s ACCOUNT LOCK", Quote(a[0]), Quote(a[1]))); err != nil {
			return err
		}
	}
	return nil
}

func accounts(ctx context.Context, c *sql.Conn, q string) ([][2]string, error) {
	rows, err := c.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("mysqld: accounts: list: %w", err)
	}
	defer rows.Close()
	var out [][2]string
	for rows.Next() {
		var u, h string
		if err := rows.Scan(&u, &h); err != nil {
			return nil, err
		}
		out = append(out, [2]string{u, h})
	}
	return out, rows.Err()
}

// Harden runs the account lock-down (harden) over the admin connection,
// outside the binlog. Start calls it, so every start of an instance
// repairs what an older phxgo left.
func (i *Instance) Harden(ctx context.Context) error {
	db, err := i.open("")
	if err != nil {
		return err
	}
	defer db.Close()
	return withoutBinlog(ctx, db, func(c *sql.Conn) error { return harden(ctx, c, AdminUser()) })
}

// adoptLegacyAdmin is for a datadir made by an older phxgo while this
// process runs as an OS user other than root: the admin account does not
// exist yet, but root@localhost has no password. It logs in as that root
// once and hardens, which creates the admin account. It reports whether
// it did. Nothing is done on any other error.
func (i *Instance) adoptLegacyAdmin(ctx context.Context, pingErr error) (bool, error) {
	var me *mysql.MySQLError
	if AdminUser() == "root" || !errors.As(pingErr, &me) || (me.Number != 1045 && me.Number != 1698) {
		return false, nil
	}
	cfg := i.dsnConfig("root", "")
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return false, err
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		return false, nil // not a legacy datadir: report the admin error
	}
	i.opts.Logger.Warn("datadir from an older phxgo: root@localhost had no password; making administration socket-only",
		"admin", AdminUser(), "dir", i.opts.Dir)
	return true, withoutBinlog(ctx, db, func(c *sql.Conn) error { return harden(ctx, c, AdminUser()) })
}
