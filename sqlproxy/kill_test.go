package sqlproxy

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestKillRefused (real MariaDB, semi-sync on with no replica, so a
// COMMIT waits for an ACK that never comes): through the proxy, every
// kill of the waiting session is refused with 1235, in text and as a
// prepared statement, and the commit keeps waiting (a KILL QUERY would
// have released it with OK, a KILL CONNECTION of a group commit's leader
// the commits behind it). Last, the same KILL QUERY sent to MariaDB
// directly shows the false OK the refusal prevents.
func TestKillRefused(t *testing.T) {
	a := startInstances(t, 1)[0]
	execRoot(t, a, "CREATE DATABASE IF NOT EXISTS test", "CREATE TABLE test.t (id INT PRIMARY KEY)",
		"SET GLOBAL rpl_semi_sync_master_enabled=ON")
	p := startProxy(t, 1, masterView(a), Linearizable, []string{a.Addr()}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := a.DB("")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()

	done := make(chan error, 1)
	go func() {
		_, err := appDB(t, p.addr, "test", false).ExecContext(ctx, "INSERT INTO test.t VALUES (1)")
		done <- err
	}()
	var thread, queryID int64
	await(t, ctx, "the INSERT waits for the semi-sync ACK", func() bool {
		err := admin.QueryRowContext(ctx, "SELECT id, query_id FROM information_schema.processlist "+
			"WHERE state LIKE 'Waiting for semi-sync ACK%' AND info LIKE 'INSERT INTO test.t%'").Scan(&thread, &queryID)
		return err == nil
	})
	id, qid := strconv.FormatInt(thread, 10), strconv.FormatInt(queryID, 10)

	b := appDB(t, p.addr, "test", true)
	for _, q := range []string{
		"KILL QUERY " + id, "kill hard query " + id, "KILL SOFT QUERY " + id, "KILL QUERY ID " + qid,
		"KILL QUERY USER app", "/* c */ KILL\n/* d */ QUERY " + id, "/*!KILL QUERY " + id + " */",
		"SELECT 1; KILL QUERY " + id, "EXECUTE IMMEDIATE 'KILL QUERY " + id + "'",
		"PREPARE s FROM 'KILL QUERY " + id + "'",
		"KILL " + id, "KILL CONNECTION " + id, "KILL HARD CONNECTION " + id, "KILL USER app",
		"KILL CONNECTION USER app", "EXECUTE IMMEDIATE 'KILL " + id + "'",
	} {
		wantKillRefused(t, q, execErr(ctx, b, q))
	}
	_, err = b.PrepareContext(ctx, "KILL QUERY ?") // COM_STMT_PREPARE
	wantKillRefused(t, "prepared KILL QUERY ?", err)

	select {
	case err := <-done:
		t.Fatalf("the waiting INSERT returned (%v): a statement kill reached MariaDB", err)
	default:
	}
	var waiting int
	if err := admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.processlist WHERE id = ?", thread).Scan(&waiting); err != nil || waiting != 1 {
		t.Fatalf("thread %d gone (%d, %v)", thread, waiting, err)
	}

	// End the first INSERT the way an operator would, on MariaDB as root
	// (its client then sees a lost connection), so the second below does
	// not queue behind it.
	if _, err := admin.ExecContext(ctx, "KILL CONNECTION "+id); err != nil {
		t.Fatalf("KILL CONNECTION as root: %v", err)
	}
	if err := <-done; err == nil {
		t.Fatal("the killed INSERT got OK")
	}

	// The hazard itself, past the proxy: the app account on MariaDB
	// directly kills the query of its own other session, whose commit
	// then reports OK without any ACK.
	go func() {
		_, err := appDB(t, p.addr, "test", false).ExecContext(ctx, "INSERT INTO test.t VALUES (2)")
		done <- err
	}()
	await(t, ctx, "the second INSERT waits for the semi-sync ACK", func() bool {
		return admin.QueryRowContext(ctx, "SELECT id FROM information_schema.processlist "+
			"WHERE state LIKE 'Waiting for semi-sync ACK%' AND info LIKE 'INSERT INTO test.t VALUES (2)%'").Scan(&thread) == nil
	})
	if err := execErr(ctx, appDB(t, a.Addr(), "test", false), "KILL QUERY "+strconv.FormatInt(thread, 10)); err != nil {
		t.Fatalf("KILL QUERY on MariaDB directly: %v", err)
	}
	if err := <-done; err != nil {
		t.Logf("MariaDB no longer releases a waiting commit on KILL QUERY (%v); the refusal stays as defence", err)
	} else {
		t.Log("confirmed: KILL QUERY on MariaDB directly released a commit waiting for its ACK with OK")
	}
}

func execErr(ctx context.Context, db *sql.DB, q string) error {
	_, err := db.ExecContext(ctx, q)
	return err
}

func wantKillRefused(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: not refused", what)
	}
	if !strings.Contains(err.Error(), "KILL is refused") {
		t.Fatalf("%s: %v", what, err)
	}
	if me := mysqlErr(t, err); me.Number != 1235 {
		t.Fatalf("%s: error %d, want 1235", what, me.Number)
	}
}

// TestKillUnderSQLModes (real MariaDB): a KILL hidden from the default
// lexing by the session's own sql_mode is refused. Under
// NO_BACKSLASH_ESCAPES '\' is a whole string and under ANSI_QUOTES "\" an
// identifier, so the KILL after it runs, where the default reading saw
// it inside a string. Data holding an escaped quote and the word kill
// still goes through once the mode is known.
func TestKillUnderSQLModes(t *testing.T) {
	a := startInstances(t, 1)[0]
	execRoot(t, a, "CREATE DATABASE IF NOT EXISTS test", "CREATE TABLE test.t (id INT PRIMARY KEY, s TEXT)")
	p := startProxy(t, 1, masterView(a), Linearizable, []string{a.Addr()}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := appDB(t, p.addr, "test", true)
	db.SetMaxOpenConns(1) // one session: the sql_mode set below stays
	const victim = "999999"

	for _, c := range []struct{ mode, sql string }{
		{"NO_BACKSLASH_ESCAPES", `BEGIN NOT ATOMIC DO '\'; KILL QUERY ` + victim + `; DO '1'; END`},
		{"NO_BACKSLASH_ESCAPES", `SELECT '\'; KILL QUERY ` + victim + `; -- '`},
		{"ANSI_QUOTES", `BEGIN NOT ATOMIC DECLARE "\" INT; KILL QUERY ` + victim + `; BEGIN DECLARE "y" INT; END; END`},
		{"", `SET sql_mode='NO_BACKSLASH_ESCAPES'; DO '\'; KILL QUERY ` + victim + `; -- '`},
	} {
		if _, err := db.ExecContext(ctx, "SET sql_mode = ?", c.mode); err != nil {
			t.Fatal(err)
		}
		wantKillRefused(t, c.mode+": "+c.sql, execErr(ctx, db, c.sql))
	}

	if _, err := db.ExecContext(ctx, "SET sql_mode = DEFAULT"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO t VALUES (1, 'Don\'t'), (2, 'how to kill a process')`); err != nil {
		t.Fatalf("data with an escaped quote and the word kill: %v", err)
	}
	// A new session learns the default mode from the proxy's last login,
	// so even its first statement reads as data.
	fresh := appDB(t, p.addr, "test", false)
	if _, err := fresh.ExecContext(ctx, `INSERT INTO t VALUES (3, 'it\'s'), (4, 'kill -9')`); err != nil {
		t.Fatalf("first statement of a new session: %v", err)
	}
}
