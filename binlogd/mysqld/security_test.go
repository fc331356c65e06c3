package mysqld

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// tcpDB opens user over TCP to the instance, as a client on the network would.
func tcpDB(t *testing.T, inst *Instance, user, pass, db string) *sql.DB {
	t.Helper()
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName = user, pass, "tcp", inst.Addr(), db
	cfg.Timeout = 5 * time.Second
	d, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	d.SetMaxOpenConns(1) // one session: SET SESSION sticks
	t.Cleanup(func() { d.Close() })
	return d
}

// mysqlErr asserts err is a MariaDB error with one of the codes.
func mysqlErr(t *testing.T, what string, err error, codes ...uint16) {
	t.Helper()
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		t.Fatalf("%s: want MariaDB error %v, got %v", what, codes, err)
	}
	for _, c := range codes {
		if me.Number == c {
			t.Logf("%s: refused: %v", what, err)
			return
		}
	}
	t.Fatalf("%s: want error %v, got %v", what, codes, err)
}

func bootstrapped(t *testing.T) (*Instance, *sql.DB) {
	t.Helper()
	inst, admin := NewTestServer(t, 1)
	if _, err := admin.Exec("SET GLOBAL read_only=OFF"); err != nil {
		t.Fatal(err)
	}
	return inst, admin
}

// A stranger on the network: root (and the server's OS user, and an
// anonymous user) without a password get nothing; binlogd's own admin
// login over the socket works.
func TestNoPasswordlessLoginOverTCP(t *testing.T) {
	inst, admin := bootstrapped(t)
	for _, u := range []string{"root", ServerOSUser, "", AdminUser()} {
		err := tcpDB(t, inst, u, "", "").Ping()
		// 1130: no account for this host; 1045/1698: access denied.
		mysqlErr(t, "TCP login as "+strconvQuote(u)+" without a password", err, 1045, 1130, 1698)
	}
	var who string
	if err := admin.QueryRow("SELECT CURRENT_USER()").Scan(&who); err != nil {
		t.Fatalf("admin over the socket: %v", err)
	}
	if who != AdminUser()+"@localhost" {
		t.Fatalf("admin over the socket is %q, want %s@localhost", who, AdminUser())
	}
	var n int
	if err := admin.QueryRow(`SELECT COUNT(*) FROM mysql.global_priv
		WHERE IFNULL(JSON_VALUE(Priv,'$.authentication_string'),'') = '' AND JSON_VALUE(Priv,'$.plugin') <> 'unix_socket'
		  AND NOT JSON_CONTAINS_PATH(Priv,'one','$.auth_or') AND IFNULL(JSON_VALUE(Priv,'$.account_locked'),'0') NOT IN ('1','true')`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d passwordless unlocked accounts (err %v)", n, err)
	}
}

func strconvQuote(s string) string { return strconv.Quote(s) }

// The app account: everything an application does in its own databases,
// nothing that reaches the grant tables, the server's files, its
// replication safety or other sessions.
func TestAppAccountConfined(t *testing.T) {
	inst, admin := bootstrapped(t)
	a := DefaultAccounts()
	app := tcpDB(t, inst, a.AppUser, a.AppPassword, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// Normal use: CREATE DATABASE of an application database, DDL, DML,
	// a temporary table, a transaction.
	for _, q := range []string{
		"CREATE DATABASE app",
		"CREATE TABLE app.t (id INT PRIMARY KEY, v INT)",
		"INSERT INTO app.t VALUES (1, 1), (2, 2)",
		"UPDATE app.t SET v = 3 WHERE id = 1",
		"ALTER TABLE app.t ADD COLUMN w INT",
		"CREATE INDEX tv ON app.t (v)",
		"CREATE TEMPORARY TABLE app.tmp (id INT)",
		"DELETE FROM app.t WHERE id = 2",
		"CREATE DATABASE app_orders",
		"CREATE TABLE app_orders.o (id INT PRIMARY KEY) ENGINE=InnoDB",
		"DROP DATABASE app_orders",
	} {
		if _, err := app.ExecContext(ctx, q); err != nil {
			t.Fatalf("app: %s: %v", q, err)
		}
	}

	// The attacks.
	attacks := []struct {
		q     string
		codes []uint16
	}{
		{"SELECT User, authentication_string FROM mysql.user", []uint16{1142}},
		{"SELECT * FROM mysql.global_priv", []uint16{1142}},
		{"UPDATE mysql.global_priv SET Priv = '{}' WHERE User = 'root'", []uint16{1142}},
		{"GRANT ALL ON *.* TO app@'%'", []uint16{1044, 1045, 1227}},
		{"CREATE USER evil@'%' IDENTIFIED BY 'x'", []uint16{1227}},
		{"SET GLOBAL rpl_semi_sync_master_enabled = OFF", []uint16{1227}},
		{"SET GLOBAL read_only = OFF", []uint16{1227}},
		{"SET SESSION sql_log_bin = 0", []uint16{1227}},
		{"SET SESSION enforce_storage_engine = MyISAM", []uint16{1227}},
		{"SELECT 1 INTO OUTFILE '/tmp/phxgo-outfile'", []uint16{1045, 1227}},
		{"SELECT LOAD_FILE('/etc/passwd')", nil}, // checked below
		{"CREATE DATABASE notanapp", []uint16{1044}},
		{"CREATE TABLE mysql.evil (id INT)", []uint16{1142}},
		{"SHOW GRANTS FOR root@localhost", []uint16{1044}},
		{"CREATE TABLE app.m (id INT) ENGINE=MyISAM", []uint16{1290}},
		{"CREATE TABLE app.a (id INT) ENGINE=Aria", []uint16{1290}},
		{"CREATE TABLE app.h (id INT) ENGINE=MEMORY", []uint16{1290}},
		{"ALTER TABLE app.t ENGINE=MyISAM", []uint16{1290}},
		{"CREATE TEMPORARY TABLE app.tm (id INT) ENGINE=MyISAM", []uint16{1290}},
	}
	for _, at := range attacks {
		if at.codes == nil {
			var v sql.NullString
			if err := app.QueryRowContext(ctx, at.q).Scan(&v); err != nil || v.Valid {
				t.Fatalf("%s: got %v, %v (LOAD_FILE must read nothing without FILE)", at.q, v, err)
			}
			continue
		}
		_, err := app.ExecContext(ctx, at.q)
		mysqlErr(t, "app: "+at.q, err, at.codes...)
	}

	// PROCESS: another session's query is invisible to app.
	hold := make(chan error, 1)
	go func() {
		_, err := admin.ExecContext(ctx, "SELECT SLEEP(5) /* admin-secret-query */")
		hold <- err
	}()
	awaitQuery(t, admin, "admin-secret-query")
	var n int
	if err := app.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '%admin-secret%' AND ID <> CONNECTION_ID()").Scan(&n); err != nil || n != 0 {
		t.Fatalf("app sees %d other sessions' queries (err %v)", n, err)
	}
	if _, err := app.ExecContext(ctx, "KILL QUERY "+processID(t, admin, "admin-secret-query")); err == nil {
		t.Fatal("app killed another account's query")
	}
	<-hold

	var grants []string
	rows, err := app.QueryContext(ctx, "SHOW GRANTS")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var g string
		_ = rows.Scan(&g)
		grants = append(grants, g)
	}
	rows.Close()
	all := strings.Join(grants, "\n")
	for _, bad := range []string{"ON *.* TO", "ON `%`", "mysql", "PROCESS", "FILE", "SUPER"} {
		if bad == "ON *.* TO" && strings.Contains(all, "GRANT USAGE ON *.* TO") && strings.Count(all, "ON *.* TO") == 1 {
			continue
		}
		if strings.Contains(all, bad) {
			t.Fatalf("app grants contain %q:\n%s", bad, all)
		}
	}
}

func awaitQuery(t *testing.T, admin *sql.DB, marker string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var n int
		if err := admin.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE ? AND ID <> CONNECTION_ID()", "%"+marker+"%").Scan(&n); err == nil && n > 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("query %q never showed up", marker)
}

func processID(t *testing.T, admin *sql.DB, marker string) string {
	t.Helper()
	var id int64
	if err := admin.QueryRow("SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE ? AND ID <> CONNECTION_ID()", "%"+marker+"%").Scan(&id); err != nil {
		t.Fatal(err)
	}
	return strconv.FormatInt(id, 10)
}

// The proxy account reads the columns sqlproxy needs from mysql.user, and
// nothing else of the mysql schema.
func TestProxyAccountNarrow(t *testing.T) {
	inst, _ := bootstrapped(t)
	a := DefaultAccounts()
	px := tcpDB(t, inst, a.ProxyUser, a.ProxyPassword, "")
	var plugin, hash string
	if err := px.QueryRow("SELECT plugin, authentication_string FROM mysql.user WHERE User = ? AND Host = '%'", a.AppUser).Scan(&plugin, &hash); err != nil || hash == "" {
		t.Fatalf("proxy reads an app hash: %q %q %v", plugin, hash, err)
	}
	if _, err := px.Exec("SHOW SLAVE STATUS"); err != nil {
		t.Fatalf("proxy SHOW SLAVE STATUS: %v", err)
	}
	for _, q := range []string{"SELECT Super_priv FROM mysql.user", "SELECT * FROM mysql.global_priv", "SELECT * FROM mysql.db", "UPDATE mysql.user SET plugin = '' WHERE 0"} {
		_, err := px.Exec(q)
		mysqlErr(t, "proxy: "+q, err, 1142, 1143)
	}
}

// mariadbd runs as the mysql OS user, with its files under FilesDir only.
func TestServerRunsUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("runs mariadbd as another user only when the test runs as root")
	}
	inst, admin := bootstrapped(t)
	u, err := user.Lookup(ServerOSUser)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(inst.Pid()) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	var uidLine string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "Uid:") {
			uidLine = l
		}
	}
	for _, f := range strings.Fields(uidLine)[1:] { // real, effective, saved, fs
		if f != u.Uid {
			t.Fatalf("mariadbd %s, want every uid %s (%s)", uidLine, u.Uid, ServerOSUser)
		}
	}
	var priv string
	var infile int
	if err := admin.QueryRow("SELECT @@secure_file_priv, @@local_infile").Scan(&priv, &infile); err != nil {
		t.Fatal(err)
	}
	if filepath.Clean(priv) != inst.FilesDir() || infile != 1 {
		t.Fatalf("secure_file_priv=%q local_infile=%d", priv, infile)
	}
	// Even the admin (FILE) cannot write outside FilesDir.
	_, err = admin.Exec("SELECT 1 INTO OUTFILE '/tmp/phxgo-admin-outfile'")
	mysqlErr(t, "admin INTO OUTFILE outside secure_file_priv", err, 1290)
	for _, f := range []string{inst.DataDir(), filepath.Join(inst.DataDir(), "ibdata1"), inst.BinlogIndex(), inst.TmpDir()} {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if uid := st.Sys().(*syscall.Stat_t).Uid; strconv.Itoa(int(uid)) != u.Uid {
			t.Fatalf("%s owned by uid %d", f, uid)
		}
	}
	if st, _ := os.Stat(inst.ConfigFile()); st.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Fatal("my.cnf not owned by root")
	}
}

// A datadir made by an older phxgo (install-db with a passwordless root
// at four hosts, the server run as root, app granted on *.*, the proxy
// SELECT on mysql.*) is repaired by the next Init, Start and Bootstrap.
func TestLegacyDatadirRepaired(t *testing.T) {
	if _, err := exec.LookPath("mariadb-install-db"); err != nil {
		t.Skip(ErrNotInstalled)
	}
	dir := t.TempDir()
	inst, err := New(Options{Dir: dir, Port: FreePort(t), ServerID: 3})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// What the old Init did.
	cnf := filepath.Join(dir, "legacy.cnf")
	if err := os.MkdirAll(inst.TmpDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	me := AdminUser() // the OS user: root, or (run as another user) the adoptLegacyAdmin path
	// Its own tmpdir: in the shared /tmp, another test's starting mariadbd
	// removes this one's #sql temp files and install-db aborts (seen once).
	if err := os.WriteFile(cnf, []byte("[mysqld]\ndatadir="+inst.DataDir()+"\ntmpdir="+inst.TmpDir()+"\nuser="+me+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, "mariadb-install-db", "--defaults-file="+cnf, "--user="+me,
		"--auth-root-authentication-method=normal", "--skip-test-db").CombinedOutput()
	if err != nil {
		t.Fatalf("legacy install-db: %v\n%s", err, out)
	}
	if err := inst.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if err := inst.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inst.Kill() })
	admin, err := inst.DB("")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	a := DefaultAccounts()
	// What the old Bootstrap granted.
	for _, q := range []string{
		"SET sql_log_bin = 0",
		"CREATE USER app@'%' IDENTIFIED BY 'app-secret'",
		"GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, PROCESS ON *.* TO app@'%'",
		"CREATE USER phxgo_proxy@'%' IDENTIFIED BY 'proxy-secret'",
		"GRANT SELECT ON mysql.* TO phxgo_proxy@'%'",
		"CREATE USER lazy@'%'", // someone's passwordless account
	} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, u := range []string{"root", "lazy"} {
		if err := tcpDB(t, inst, u, "", "").Ping(); u == "lazy" && err != nil {
			t.Fatalf("setup: passwordless %s over TCP: %v", u, err)
		}
	}
	if err := Bootstrap(ctx, admin, a); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"root", "lazy"} {
		mysqlErr(t, u+" over TCP after repair", tcpDB(t, inst, u, "", "").Ping(), 1045, 1130, 1698, 4151)
	}
	app := tcpDB(t, inst, a.AppUser, a.AppPassword, "")
	_, err = app.Exec("SELECT 1 FROM mysql.user")
	mysqlErr(t, "app reads mysql.user after repair", err, 1142)
	var n int
	if err := app.QueryRow("SELECT COUNT(*) FROM information_schema.USER_PRIVILEGES WHERE PRIVILEGE_TYPE <> 'USAGE'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("app keeps %d global privileges (%v)", n, err)
	}
	px := tcpDB(t, inst, a.ProxyUser, a.ProxyPassword, "")
	_, err = px.Exec("SELECT * FROM mysql.db")
	mysqlErr(t, "proxy reads mysql.db after repair", err, 1142)
	if err := Bootstrap(ctx, admin, a); err != nil {
		t.Fatalf("second Bootstrap: %v", err)
	}
}

func TestValidateAppDatabases(t *testing.T) {
	for _, bad := range []string{"%", "m%", "_ysql", "s_s", "%schema", "", "a`b", "MYSQL"} {
		if err := ValidateAppDatabases([]string{bad}); !errors.Is(err, ErrBadAppDatabase) {
			t.Errorf("%q accepted (%v)", bad, err)
		}
	}
	if err := ValidateAppDatabases(append([]string{`a%`, `my\_app`, `shop`}, DefaultAppDatabases...)); err != nil {
		t.Fatal(err)
	}
	if !likeMatch(`app\_%`, "app_x") || likeMatch(`app\_%`, "appx") || !likeMatch("a_c", "abc") || likeMatch("abc", "abcd") {
		t.Fatal("likeMatch")
	}
}
