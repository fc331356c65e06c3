package mysqld

import (
	"context"
	"testing"
	"time"
)

func TestStartWriteKillRestart(t *testing.T) {
	inst := NewTestInstance(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db := inst.TestDB(t)
	if _, err := db.ExecContext(ctx, "CREATE DATABASE t; CREATE TABLE t.x (id INT PRIMARY KEY); INSERT INTO t.x VALUES (1),(2)"); err != nil {
		t.Fatal(err)
	}
	var fmtName string
	if err := db.QueryRowContext(ctx, "SELECT @@binlog_format").Scan(&fmtName); err != nil || fmtName != "ROW" {
		t.Fatalf("binlog_format=%q err=%v", fmtName, err)
	}
	if err := inst.Kill(); err != nil {
		t.Fatal(err)
	}
	if inst.Pid() != 0 {
		t.Fatal("pid after kill")
	}
	if err := inst.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM t.x").Scan(&n); err != nil || n != 2 {
		t.Fatalf("rows after kill -9 restart: %d, %v", n, err)
	}
}
