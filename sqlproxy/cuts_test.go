package sqlproxy

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"phxgo/sqlproxy/internal/fakebackend"
)

// TestBackendCuts: a backend connection that dies while answering, at
// each point of the answer (fakebackend's scripted drops). Before any
// byte reached the client the session answers for it (txstate.go); once
// the client saw part of a result set only closing the client is honest.
// Either way the proxy serves on.
func TestBackendCuts(t *testing.T) {
	m := startFakes(t, 1)[0]
	mustFake(t, m, "CREATE TABLE app.t (k INT PRIMARY KEY, v INT)")
	m.Hook = func(q fakebackend.Query) *fakebackend.Reply {
		rows := &fakebackend.Reply{Cols: []string{"x"}, Rows: [][]string{{"1"}, {"2"}, {"3"}}, Drop: true, DropAfterRows: 1}
		switch {
		case strings.Contains(q.SQL, "cut_before"):
			return &fakebackend.Reply{Drop: true}
		case strings.Contains(q.SQL, "cut_frame_first"):
			return &fakebackend.Reply{Drop: true, CutFrame: true}
		case strings.Contains(q.SQL, "cut_rows"):
			return rows
		case strings.Contains(q.SQL, "cut_frame_rows"):
			rows.CutFrame = true
			return rows
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := startFakeProxy(t, 1, masterView(m), Linearizable, func(c *Config) { c.Hold = time.Hour })
	works := func(t *testing.T, c interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}) {
		t.Helper()
		if id := serverID(t, c, "SELECT @@server_id"); id != 1 {
			t.Fatalf("server_id %d", id)
		}
	}

	for _, q := range []string{"SELECT 'cut_before'", "SELECT 'cut_frame_first'"} {
		t.Run("autocommit_"+q[8:len(q)-1], func(t *testing.T) {
			c := fakeConn(t, ctx, p.addr)
			_, err := c.ExecContext(ctx, q)
			wantSQLErr(t, err, 1927, "08S01") // outcome unknown; nothing reached the client
			works(t, c)                       // the same client goes on, on a new backend
		})
		t.Run("in_transaction_"+q[8:len(q)-1], func(t *testing.T) {
			c := fakeConn(t, ctx, p.addr)
			execOK(t, ctx, c, "BEGIN")
			execOK(t, ctx, c, "INSERT INTO t VALUES (1, 1)")
			_, err := c.ExecContext(ctx, q)
			wantSQLErr(t, err, 1290, "40001") // a query never commits: rolled back
			_, err = c.ExecContext(ctx, "INSERT INTO t VALUES (2, 2)")
			wantSQLErr(t, err, 1290, "40001") // aborted until the client ends it
			execOK(t, ctx, c, "ROLLBACK")
			works(t, c)
			if n := m.Count("SELECT COUNT(*) FROM app.t"); n != 0 {
				t.Fatalf("%d rows of the lost transaction", n)
			}
		})
	}

	for _, q := range []string{"SELECT 'cut_rows'", "SELECT 'cut_frame_rows'"} {
		t.Run("mid_result_"+q[8:len(q)-1], func(t *testing.T) {
			db := fakeDB(t, p.addr, "app")
			db.SetMaxOpenConns(1)
			rows, err := db.QueryContext(ctx, q)
			if err == nil {
				for rows.Next() {
				}
				err = rows.Err()
				rows.Close()
			}
			if err == nil {
				t.Fatal("a result cut after its first row read as complete")
			}
			works(t, db) // the pool's next connection: a new client session
		})
	}
}
