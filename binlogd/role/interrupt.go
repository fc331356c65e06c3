package role

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// interruptStatements stops every client statement still running on a
// server whose read_only barrier completed and where no commit waits for
// an ACK, and waits until each has ended.
//
// Why (measured on MariaDB 10.11, ddl_test.go): a DDL checks read_only
// when it starts, before it takes its backup lock
// (deny_updates_if_read_only_option); one that started while the read_only
// change waited for a running statement queued behind the change's lock and
// ran once read_only was on. A copying ALTER of seconds then passed
// CheckQuiet and the release (not in the binlog yet, not waiting), and
// returned OK with semi-sync off: a GTID the log lacks. BACKUP STAGE
// BLOCK_DDL is no barrier for it (measured): granted while the ALTER
// copied, the ALTER only waited at its end and went on after BACKUP STAGE
// END.
//
// What it may interrupt: no commit (the barrier: none in flight, none can
// start for an account without READ ONLY ADMIN) and no statement waiting
// for an ACK (the caller counted zero first: KILL QUERY would return it
// OK). So a killed statement did nothing that counts, or got as far as the
// binlog, which the caller's gtid_binlog_pos check then sees. Readers of a
// demoted master lose their running query once. binlogd's own account and
// the server's threads are left alone.
func interruptStatements(ctx context.Context, db *sql.DB) error {
	type stmt struct{ id, query int64 }
	list := func() ([]stmt, error) {
		rows, err := db.QueryContext(ctx, `SELECT id, query_id FROM information_schema.processlist
			WHERE command = 'Query' AND id <> CONNECTION_ID()
			AND user NOT IN ('system user', SUBSTRING_INDEX(CURRENT_USER(), '@', 1))`)
		if err != nil {
			return nil, fmt.Errorf("role: list running statements: %w", err)
		}
		defer rows.Close()
		var out []stmt
		for rows.Next() {
			var s stmt
			if err := rows.Scan(&s.id, &s.query); err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, rows.Err()
	}
	running, err := list()
	if err != nil {
		return err
	}
	for _, s := range running {
		// An unknown thread id: it ended meanwhile.
		_, _ = db.ExecContext(ctx, fmt.Sprintf("KILL QUERY %d", s.id))
	}
	for len(running) > 0 {
		now, err := list()
		if err != nil {
			return err
		}
		left := running[:0]
		for _, s := range running {
			for _, n := range now {
				if n == s { // the same statement of the same connection
					left = append(left, s)
					break
				}
			}
		}
		running = left
		if len(running) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("role: %d interrupted statements still running: %w", len(running), ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}
