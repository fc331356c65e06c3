package role

import (
	"context"
	"database/sql"
	"strconv"
	"testing"
	"time"
)

// ddlMaster is semiSyncMaster with app.big, a table whose copying ALTER
// takes seconds.
func ddlMaster(t *testing.T, rows int) (*sql.DB, *sql.DB) {
	t.Helper()
	return semiSyncMasterWith(t, 3*time.Minute, "CREATE TABLE app.big (id INT PRIMARY KEY, pad VARCHAR(200))",
		"INSERT INTO app.big SELECT seq, REPEAT('x', 200) FROM app.seq_1_to_"+strconv.Itoa(rows))
}

func stateOf(admin *sql.DB, prefix string) string {
	var s sql.NullString
	_ = admin.QueryRow("SELECT state FROM information_schema.processlist WHERE info LIKE ?", prefix+"%").Scan(&s)
	return s.String
}

// A DDL checks read_only when it starts, before its backup lock: started
// while the read_only change waits for a running statement, it queues
// behind the change and runs once read_only is on. Measured on 10.11
// before interruptStatements: the copying ALTER passed CheckQuiet and
// ReleaseSemiSync (nothing waiting, not in the binlog yet), then returned
// OK with semi-sync off, its GTID in the binlog and not in the log. Now
// CheckQuiet interrupts it: the client gets an error, the column is not
// there, and the binlog did not move.
func TestQuietStopsDDLQueuedBehindReadOnly(t *testing.T) {
	ctx := context.Background()
	admin, app := ddlMaster(t, 150000)
	before, err := BinlogPos(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	// S1 holds a DML backup lock for 2 s and writes nothing: the read_only
	// change waits for it.
	s1 := make(chan error, 1)
	go func() { _, err := app.Exec("UPDATE app.t SET id=id WHERE SLEEP(2)=0"); s1 <- err }()
	await(t, "S1 running", func() bool { return stateOf(admin, "UPDATE app.t SET id=id") != "" })
	ro := make(chan error, 1)
	go func() {
		_, err := admin.Exec("SET STATEMENT lock_wait_timeout=20 FOR SET GLOBAL read_only=ON")
		ro <- err
	}()
	await(t, "read_only waiting for S1", func() bool {
		return stateOf(admin, "SET STATEMENT lock_wait_timeout=20") == "Waiting for backup lock"
	})
	const alter = "ALTER TABLE app.big ADD COLUMN c INT, ALGORITHM=COPY"
	ddl := make(chan error, 1)
	go func() { _, err := app.Exec(alter); ddl <- err }()
	await(t, "the DDL past its read_only check, queued behind the change", func() bool {
		return stateOf(admin, alter) == "Waiting for backup lock"
	})
	if err := <-ro; err != nil {
		t.Fatalf("read_only on: %v", err)
	}
	if err := <-s1; err != nil {
		t.Fatalf("S1: %v", err)
	}
	var on bool
	if err := admin.QueryRow("SELECT @@GLOBAL.read_only").Scan(&on); err != nil || !on {
		t.Fatalf("read_only %v %v", on, err)
	}
	await(t, "the DDL running with read_only on", func() bool {
		st := stateOf(admin, alter)
		return st != "" && st != "Waiting for backup lock"
	})
	t.Logf("read_only on, the DDL runs: %q", stateOf(admin, alter))

	if err := ReleaseSemiSync(ctx, admin, time.Second, logAt(before)); err != nil {
		t.Fatalf("ReleaseSemiSync: %v", err)
	}
	select {
	case err := <-ddl:
		if err == nil {
			t.Fatal("the DDL returned OK after the release")
		}
		t.Logf("the DDL returned %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the DDL still runs after the release")
	}
	var cols int
	if err := admin.QueryRow("SELECT COUNT(*) FROM information_schema.columns WHERE table_schema='app' AND table_name='big' AND column_name='c'").Scan(&cols); err != nil || cols != 0 {
		t.Fatalf("column c: %d (%v), want none", cols, err)
	}
	if after, err := BinlogPos(ctx, admin); err != nil || after != before {
		t.Fatalf("binlog at %v (%v), want %v: it holds what the log lacks", after, err, before)
	}
}
