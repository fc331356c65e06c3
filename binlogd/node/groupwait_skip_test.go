package node

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// After a period whose query failed, tuneGroupCommit sets the count to 0
// ("start from no wait") but kept its own idea of the count: when the
// next periods' groups ask for that same count, it saw no change to make
// and left MariaDB without a wait for as long as the load stayed the same.
func TestTuneGroupCommitResumesAfterASkippedPeriod(t *testing.T) {
	srv := &scriptedServer{readings: make(chan scriptedReading)}
	db := sql.OpenDB(srv)
	defer db.Close()
	n := &Node{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.tuneGroupCommit(ctx, db, 2*time.Millisecond, func() ackTimes { return ackTimes{} })
	}()
	// Each send is answered by one SHOW GLOBAL STATUS, so the tuner has
	// finished with a reading once it asks for the next one.
	steady := func(i uint64) scriptedReading { return scriptedReading{commits: 100 * i, groups: 20 * i} } // groups of 5
	srv.readings <- steady(0)                                                                             // first period: reset to 0
	srv.readings <- steady(1)                                                                             // groups of 5 ask for 9
	srv.readings <- scriptedReading{err: errors.New("connection reset")}                                  // one period skipped
	if got := srv.count(); got != 9 {
		t.Fatalf("groups of 5: binlog_commit_wait_count=%d, want 9", got)
	}
	srv.readings <- steady(2) // back: reset to 0
	srv.readings <- steady(3) // the same groups of 5
	srv.readings <- steady(4)
	srv.readings <- steady(5) // the tuner is done with steady(4)
	if got := srv.count(); got != 9 {
		t.Errorf("groups of 5 again after a skipped period: binlog_commit_wait_count=%d, want 9: after the reset to 0 it still took the count to be 9, the same as the groups ask for", got)
	}
	cancel()
	<-done
	if got := srv.count(); got != 0 {
		t.Errorf("after the term: binlog_commit_wait_count=%d, want 0", got)
	}
}

// scriptedServer answers the tuner's two statements: SHOW GLOBAL STATUS
// with the next scripted reading, SET GLOBAL by remembering the count.
type scriptedServer struct {
	readings chan scriptedReading
	mu       sync.Mutex
	set      int
}

type scriptedReading struct {
	commits, groups uint64
	err             error
}

func (s *scriptedServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.set
}

func (s *scriptedServer) Connect(context.Context) (driver.Conn, error) { return scriptedConn{s}, nil }
func (s *scriptedServer) Driver() driver.Driver                        { return nil }

type scriptedConn struct{ s *scriptedServer }

func (c scriptedConn) Prepare(string) (driver.Stmt, error) { return nil, errors.New("not supported") }
func (c scriptedConn) Close() error                        { return nil }
func (c scriptedConn) Begin() (driver.Tx, error)           { return nil, errors.New("not supported") }

func (c scriptedConn) ExecContext(_ context.Context, q string, _ []driver.NamedValue) (driver.Result, error) {
	var usec, count int
	if _, err := fmt.Sscanf(q, "SET GLOBAL binlog_commit_wait_usec=%d, GLOBAL binlog_commit_wait_count=%d", &usec, &count); err != nil {
		return nil, fmt.Errorf("unexpected statement %q: %v", q, err)
	}
	c.s.mu.Lock()
	c.s.set = count
	c.s.mu.Unlock()
	return driver.RowsAffected(0), nil
}

func (c scriptedConn) QueryContext(ctx context.Context, q string, _ []driver.NamedValue) (driver.Rows, error) {
	if !strings.HasPrefix(q, "SHOW GLOBAL STATUS") {
		return nil, fmt.Errorf("unexpected query %q", q)
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-c.s.readings:
		if r.err != nil {
			return nil, r.err
		}
		return &scriptedRows{vals: [][2]string{
			{"Binlog_commits", fmt.Sprint(r.commits)},
			{"Binlog_group_commits", fmt.Sprint(r.groups)},
		}}, nil
	}
}

type scriptedRows struct {
	vals [][2]string
	i    int
}

func (r *scriptedRows) Columns() []string { return []string{"Variable_name", "Value"} }
func (r *scriptedRows) Close() error      { return nil }
func (r *scriptedRows) Next(dest []driver.Value) error {
	if r.i == len(r.vals) {
		return io.EOF
	}
	dest[0], dest[1] = r.vals[r.i][0], r.vals[r.i][1]
	r.i++
	return nil
}
