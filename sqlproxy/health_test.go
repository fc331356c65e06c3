package sqlproxy

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// TestHealthCheckSeesLateGrant: the health account logs in before it
// holds SLAVE MONITOR (binlogd creates the user, then grants). MariaDB
// fixes a session's global privileges at login, so the check must not
// keep that session: once the grant lands, the next check passes.
func TestHealthCheckSeesLateGrant(t *testing.T) {
	if testing.Short() {
		t.Skip("starts MariaDB; skipped in -short")
	}
	inst := startInstances(t, 1)[0]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	root, err := inst.DB("")
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	const user, pass = "late_monitor", "late-secret"
	if _, err := root.ExecContext(ctx, "CREATE USER "+user+"@'%' IDENTIFIED BY '"+pass+"'"); err != nil {
		t.Fatal(err)
	}
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr = user, pass, "tcp", inst.Addr()
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	db.SetMaxIdleConns(1) // as health.db: one session, kept between checks

	var me *mysql.MySQLError
	if _, _, _, err := replicaLagFresh(ctx, db); !errors.As(err, &me) || me.Number != 1227 {
		t.Fatalf("check without SLAVE MONITOR: %v, want error 1227 (access denied)", err)
	}
	if _, err := root.ExecContext(ctx, "GRANT SLAVE MONITOR ON *.* TO "+user+"@'%'"); err != nil {
		t.Fatal(err)
	}
	lag, _, _, err := replicaLagFresh(ctx, db)
	if err != nil {
		t.Fatalf("check after the grant: %v", err)
	}
	if lag != -1 {
		t.Fatalf("lag %v on a server that is no replica, want -1", lag)
	}

	// read_only is read too: a server that takes writes is no replica to
	// send reads to (a read may call a function that writes).
	for _, on := range []bool{false, true} {
		if _, err := root.ExecContext(ctx, "SET GLOBAL read_only="+map[bool]string{false: "OFF", true: "ON"}[on]); err != nil {
			t.Fatal(err)
		}
		if _, _, ro, err := replicaLagFresh(ctx, db); err != nil || ro != on {
			t.Fatalf("read_only %v: check says %v, %v", on, ro, err)
		}
	}
}
