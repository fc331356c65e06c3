package role

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"phxgo/binlogd/mysqld"
)

// A power loss can keep relay-log.info but not the relay log it names
// (jepsen TestJepsenPowerShort, a node cut again during its recovery):
// MariaDB then starts with "Failed to open the relay log" and refuses
// every CHANGE MASTER with error 1201, and binlogd retried it every 2 s
// for good. BecomeReplica must reset the broken metadata and follow its
// upstream from the GTID position, losing nothing.
func TestBecomeReplicaAfterRelayLogLost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	up, upDB := mysqld.NewTestServer(t, 1)
	rep, repDB := mysqld.NewTestServer(t, 2)
	acc := mysqld.DefaultAccounts()
	upstream := Upstream{Addr: up.Addr(), User: acc.CaptureUser, Password: acc.CapturePassword}
	if _, err := upDB.Exec("SET GLOBAL read_only=OFF; CREATE DATABASE app; CREATE TABLE app.t (id INT PRIMARY KEY); INSERT INTO app.t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if err := BecomeReplica(ctx, repDB, upstream); err != nil {
		t.Fatal(err)
	}
	caughtUp(ctx, t, upDB, repDB)
	var relay string
	if err := repDB.QueryRowContext(ctx, "SELECT @@relay_log_basename").Scan(&relay); err != nil {
		t.Fatal(err)
	}
	if err := rep.Kill(); err != nil {
		t.Fatal(err)
	}
	logs, _ := filepath.Glob(relay + ".0*")
	if len(logs) == 0 {
		t.Fatalf("no relay log %s.0* to lose", relay)
	}
	for _, l := range logs {
		if err := os.Remove(l); err != nil {
			t.Fatal(err)
		}
	}
	if err := rep.Start(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := repDB.ExecContext(ctx, "CHANGE MASTER TO MASTER_CONNECT_RETRY=1")
	if me := (*mysql.MySQLError)(nil); !errors.As(err, &me) || me.Number != erMasterInfo {
		t.Fatalf("CHANGE MASTER with the relay log gone: %v, want error %d (the state this test is about)", err, erMasterInfo)
	}
	if _, err := upDB.Exec("INSERT INTO app.t VALUES (2)"); err != nil {
		t.Fatal(err)
	}
	if err := BecomeReplica(ctx, repDB, upstream); err != nil {
		t.Fatalf("BecomeReplica with the relay log gone: %v", err)
	}
	caughtUp(ctx, t, upDB, repDB)
	var n int
	if err := repDB.QueryRowContext(ctx, "SELECT COUNT(*) FROM app.t").Scan(&n); err != nil || n != 2 {
		t.Fatalf("replica holds %d rows (%v), want 2", n, err)
	}
}

func caughtUp(ctx context.Context, t *testing.T, upDB, repDB *sql.DB) {
	t.Helper()
	want, err := Applied(ctx, upDB)
	if err != nil {
		t.Fatal(err)
	}
	for {
		got, err := Applied(ctx, repDB)
		if err == nil && got == want {
			return
		}
		st, _ := ReplicaStatus(ctx, repDB)
		select {
		case <-ctx.Done():
			t.Fatalf("replica at %v (%v), want %v: %+v", got, err, want, st)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
