package role

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"phxgo/binlogd/mysqld"
)

// A node's MariaDB switched to replica refuses the application account's
// writes (read_only, and the account holds no SUPER), follows its upstream,
// and becomes writable again as master. The upstream here is a plain
// MariaDB; in the cluster it is the node's own binlogd.
func TestReplicaRefusesAppWritesThenBecomesMaster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	up, upDB := mysqld.NewTestServer(t, 1)
	rep, repDB := mysqld.NewTestServer(t, 2)
	acc := mysqld.DefaultAccounts()
	if _, err := upDB.Exec("SET GLOBAL read_only=OFF; CREATE DATABASE app; CREATE TABLE app.t (id INT PRIMARY KEY); INSERT INTO app.t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if err := BecomeReplica(ctx, repDB, Upstream{Addr: up.Addr(), User: acc.CaptureUser, Password: acc.CapturePassword}); err != nil {
		t.Fatal(err)
	}
	want, err := Applied(ctx, upDB)
	if err != nil {
		t.Fatal(err)
	}
	for {
		got, err := Applied(ctx, repDB)
		if err != nil {
			t.Fatal(err)
		}
		if got == want {
			break
		}
		st, _ := ReplicaStatus(ctx, repDB)
		select {
		case <-ctx.Done():
			t.Fatalf("replica at %v, want %v: %v", got, want, st)
		case <-time.After(50 * time.Millisecond):
		}
	}
	if st, err := ReplicaStatus(ctx, repDB); err != nil || st.SQLRunning != "Yes" {
		t.Fatalf("status %v %v", st, err)
	}
	// Idempotent.
	if err := BecomeReplica(ctx, repDB, Upstream{Addr: up.Addr(), User: acc.CaptureUser, Password: acc.CapturePassword}); err != nil {
		t.Fatal(err)
	}

	app := appDB(t, rep, acc)
	_, err = app.Exec("INSERT INTO app.t VALUES (2)")
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1290 {
		t.Fatalf("app write on a replica: %v, want error 1290 (read-only)", err)
	}

	if err := BecomeMaster(ctx, repDB); err != nil {
		t.Fatal(err)
	}
	if _, err := repDB.Exec("SET GLOBAL rpl_semi_sync_master_enabled=OFF"); err != nil { // no capture in this test
		t.Fatal(err)
	}
	if _, err := app.Exec("INSERT INTO app.t VALUES (2)"); err != nil {
		t.Fatalf("app write on the new master: %v", err)
	}
	if st, err := ReplicaStatus(ctx, repDB); err != nil || st.MasterHost != "" {
		t.Fatalf("still replicating: %v %v", st, err)
	}
}

func appDB(t *testing.T, inst *mysqld.Instance, acc mysqld.Accounts) *sql.DB {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr = acc.AppUser, acc.AppPassword, "tcp", inst.Addr()
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
