package recovery

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"phxgo/binlogd/mysqld"
)

// A DDL waits for its semi-sync ACK like a commit, but MariaDB has applied
// it already. Kill -9 the master while it waits, cut its group as recovery
// would (the cluster never chose it), restart: some DDL is still done. The
// old master's schema has forked, so recovery must refuse to rejoin it
// (NonTransactionalCut) and the node is reseeded.
func TestDDLCutSurvives(t *testing.T) {
	inst, ctx, db := startServer(t, 10, 5*time.Minute)
	cases := []struct {
		setup, ddl, check string
		survives          bool // measured on 10.11
	}{
		{"", "CREATE TABLE r.c1 (id INT PRIMARY KEY)", "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA='r' AND TABLE_NAME='c1'", false},
		{"CREATE TABLE r.d1 (id INT PRIMARY KEY)", "DROP TABLE r.d1", "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA='r' AND TABLE_NAME='d1'", true},
		{"CREATE TABLE r.a1 (id INT PRIMARY KEY)", "ALTER TABLE r.a1 ADD COLUMN x INT", "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA='r' AND TABLE_NAME='a1'", true},
		{"CREATE TABLE r.tr (id INT PRIMARY KEY); INSERT INTO r.tr VALUES (1),(2)", "TRUNCATE TABLE r.tr", "SELECT COUNT(*) FROM r.tr", true},
		{"", "CREATE DATABASE r2", "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME='r2'", true},
	}
	for _, c := range cases {
		if c.setup != "" {
			mustExec(t, db, c.setup)
		}
		before := state(t, db, c.check)
		_ = killWhileWaiting(ctx, t, inst, db, c.ddl)
		groups, err := Scan(inst.BinlogIndex())
		if err != nil {
			t.Fatal(err)
		}
		last := groups[len(groups)-1]
		if last.Transactional || !last.DDL {
			t.Fatalf("%s: group %+v, want a non-transactional DDL group", c.ddl, last)
		}
		plan := planCutLast(t, groups)
		err = NonTransactionalCut(plan)
		if !errors.Is(err, ErrNonTransactionalCut) || !strings.Contains(err.Error(), last.GTID.String()) || !strings.Contains(err.Error(), "reseed") {
			t.Fatalf("%s: cut of a DDL not refused: %v (plan %v)", c.ddl, err, plan)
		}
		// Cut anyway, to show what the refusal prevents.
		if _, err := Apply(inst.BinlogIndex(), plan); err != nil {
			t.Fatal(err)
		}
		if err := inst.Start(ctx); err != nil {
			t.Fatal(err)
		}
		after := state(t, db, c.check)
		survived := after != before
		t.Logf("%-40s before %-12q after the cut %-12q survived=%v", c.ddl, before, after, survived)
		if survived != c.survives {
			t.Errorf("%s: survived=%v, measured %v on 10.11 (update NonTransactionalCut's doc)", c.ddl, survived, c.survives)
		}
		mustExec(t, db, "SET GLOBAL read_only=OFF")
	}
}

func state(t *testing.T, db *sql.DB, q string) string {
	t.Helper()
	out, err := mysqld.QueryStrings(context.Background(), db, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return strings.Join(out, ",")
}
